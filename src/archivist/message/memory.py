"""The agent's conversation context: an ordered list of Msgs that persists across replies."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from archivist.message import Msg


class Memory:
    """Ordered messages, addressed by `Msg.id`. The system prompt is not stored here: the
    agent puts it in front of every model call."""

    def __init__(self, messages: Iterable[Msg] | None = None) -> None:
        self._messages: list[Msg] = list(messages or [])

    @property
    def messages(self) -> list[Msg]:
        """A copy of the messages, oldest first."""
        return list(self._messages)

    def add(
        self,
        msgs: Msg | Iterable[Msg],
        *,
        after: Msg | str | None = None,
        before: Msg | str | None = None,
    ) -> None:
        """Append `msgs`, or insert them right after / right before the given message (or id).

        Raises KeyError when the anchor is not in memory.
        """
        new = [msgs] if isinstance(msgs, Msg) else list(msgs)
        if after is not None and before is not None:
            raise ValueError("give `after` or `before`, not both")
        if after is not None:
            position = self.index(after) + 1
        elif before is not None:
            position = self.index(before)
        else:
            position = len(self._messages)
        self._messages[position:position] = new

    def remove(self, msg: Msg | str) -> bool:
        """Remove the message (or the message with this id); False if it was not there."""
        msg_id = msg if isinstance(msg, str) else msg.id
        for position, kept in enumerate(self._messages):
            if kept.id == msg_id:
                del self._messages[position]
                return True
        return False

    def index(self, msg: Msg | str) -> int:
        """Position of the message (or id); KeyError if absent."""
        msg_id = msg if isinstance(msg, str) else msg.id
        for position, kept in enumerate(self._messages):
            if kept.id == msg_id:
                return position
        raise KeyError(f"message {msg_id!r} is not in memory")

    def __contains__(self, msg: object) -> bool:
        msg_id = msg.id if isinstance(msg, Msg) else msg
        return any(kept.id == msg_id for kept in self._messages)

    def clear(self) -> None:
        """Forget everything."""
        self._messages.clear()

    def __len__(self) -> int:
        return len(self._messages)

    def __iter__(self) -> Iterator[Msg]:
        return iter(list(self._messages))
