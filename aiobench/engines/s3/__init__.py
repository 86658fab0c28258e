"""Object storage (S3): the SigV4 signer, target parsing and naming, the HTTP client."""
