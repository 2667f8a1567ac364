"""Publication: the published files, the board and its attempts composed from the built warehouse, the
build worker, the evidence audit, replay, the attempt page and the public site."""
