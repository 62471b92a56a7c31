"""Project resource types. Importing this package registers the built-in types."""

from . import github_repo, local_directory  # noqa: F401  (registration side effect)
from .registry import (  # noqa: F401
    ResourceError,
    ResourceType,
    get,
    known_types,
    merge_patch,
    register,
    split_label,
    unregister,
)
