"""Retrieval benchmarks that run memoryd's real indexing and search over public datasets.

The datasets are never shipped with memoryd (their licences forbid it or they are large): each
harness reads the file from a path the user gives and converts it into throwaway workspaces.
"""
