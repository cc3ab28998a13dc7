import asyncio, time, tempfile, sys, numpy as np, statistics
sys.path.insert(0, "/work/main/benchmarks")
from bench_query_speed import queries
from archivist.message import TextBlock
from archivist.rag.document import Chunk
from archivist.rag.record import VectorRecord
from archivist.rag.store.qdrant import QdrantStore
import archivist.rag.store.qdrant.store as st
mode = sys.argv[1]
if mode == "inline":
    async def inline(f, *a): return f(*a)
    st.asyncio.to_thread = inline  # type: ignore
async def main():
    words = " ".join(queries()).split(); rng = np.random.default_rng(0)
    recs = []
    for i in range(4000):
        v = rng.standard_normal(384).astype(np.float32); v /= np.linalg.norm(v)
        recs.append(VectorRecord(vector=v.tolist(), document_id=f"d{i//100}", chunk=Chunk(content=TextBlock(text=" ".join(words[j] for j in rng.integers(0, len(words), 200))), source="s", chunk_index=i%100, total_chunks=100)))
    gaps = []; done = False
    async def ticker():
        last = time.perf_counter()
        while not done:
            await asyncio.sleep(0.002); now = time.perf_counter(); gaps.append(now - last - 0.002); last = now
    with tempfile.TemporaryDirectory() as d:
        async with QdrantStore(path=d) as store:
            await store.create_collection("c", 384)
            t = asyncio.create_task(ticker())
            t0 = time.perf_counter()
            for k in range(0, 4000, 500):
                await store.insert("c", recs[k:k+500])
            el = time.perf_counter() - t0
            done = True; await t
    g = sorted(gaps)
    print(f"{mode}: insert {el:.2f}s, loop lag p50 {1000*g[len(g)//2]:.1f} p99 {1000*g[int(len(g)*.99)]:.1f} max {1000*g[-1]:.1f} ms")
asyncio.run(main())
