"""The memory viewer: server-rendered pages at `/` of the HTTP face, behind the same tokens."""
