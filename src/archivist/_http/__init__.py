"""The HTTP layer every provider client shares: one retry decision and loop, one client
lifecycle, and a clock that tests can replace."""
