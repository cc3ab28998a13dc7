"""What the service refuses before any work: bad keys, big or slow bodies, rates."""
