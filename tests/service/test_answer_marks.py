"""A session answers one message at a time on every replica: the answering mark is a row in
the shared database, taken over only once its replica must have died."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from sqlalchemy import Engine

from archivist.service.storage import sessions_store


def test_a_second_claim_loses_until_the_first_is_released(engine: Engine) -> None:
    session = sessions_store.create_session(engine, "acme", "")
    first = sessions_store.claim_answer(engine, session.id, stale_after=300)
    assert first is not None
    assert sessions_store.claim_answer(engine, session.id, stale_after=300) is None
    sessions_store.release_answer(engine, session.id, first)
    assert sessions_store.claim_answer(engine, session.id, stale_after=300) is not None


def test_a_mark_left_by_a_dead_replica_is_taken_over_and_its_release_is_ignored(
    engine: Engine,
) -> None:
    session = sessions_store.create_session(engine, "acme", "")
    dead = sessions_store.claim_answer(engine, session.id, stale_after=300)
    assert dead is not None
    taken = sessions_store.claim_answer(engine, session.id, stale_after=0)
    assert taken is not None and taken != dead
    sessions_store.release_answer(engine, session.id, dead)  # the old run ends late
    assert sessions_store.claim_answer(engine, session.id, stale_after=300) is None


def test_sessions_are_marked_apart_and_deleting_one_drops_its_mark(engine: Engine) -> None:
    one = sessions_store.create_session(engine, "acme", "")
    two = sessions_store.create_session(engine, "acme", "")
    assert sessions_store.claim_answer(engine, one.id, stale_after=300) is not None
    assert sessions_store.claim_answer(engine, two.id, stale_after=300) is not None
    sessions_store.delete_session(engine, one.id)
    again = sessions_store.create_session(engine, "acme", "")
    assert sessions_store.claim_answer(engine, again.id, stale_after=300) is not None


def test_claims_racing_from_many_connections_give_one_winner(engine: Engine) -> None:
    session = sessions_store.create_session(engine, "acme", "")
    with ThreadPoolExecutor(8) as pool:
        tokens = list(
            pool.map(
                lambda _: sessions_store.claim_answer(engine, session.id, stale_after=300),
                range(8),
            )
        )
    assert len([token for token in tokens if token is not None]) == 1
