"""Data Storage: one client for its REST contract (`client`) and its answers (`bodies`)."""

from hapi_grpc.adapters.datastorage.client import (
    DataStorageClient,
    DataStorageHTTPError,
    datastorage_retry_policy,
    workflow_path,
)

__all__ = ["DataStorageClient", "DataStorageHTTPError", "datastorage_retry_policy", "workflow_path"]
