"""`CredentialBase`: what every provider credential is, so code can accept any of them."""

from __future__ import annotations

from pydantic import BaseModel


class CredentialBase(BaseModel):
    """A provider's credential (a pydantic model); subclasses hold the key and endpoint and
    say which headers authenticate a request. Custom providers subclass it too."""

    def headers(self) -> dict[str, str]:
        """The auth headers every request carries; none unless a subclass adds them."""
        return {}
