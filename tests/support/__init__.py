"""Builders and helpers shared by the tests: one place for what several test modules need."""
