"""The parallel algorithm: plan rounds of bins, execute bins, settle deferred adds, assemble the
serial result."""
