"""The ``ringcast`` command line."""
