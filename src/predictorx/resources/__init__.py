"""Project resource types. Importing this package registers the built-in types."""

from . import github_repo, local_directory  # noqa: F401  (registration side effect)
from .local_directory_paths import PathRuleError  # noqa: F401  (a folder's path rules refused it)
from .placement import Placement  # noqa: F401
from .registry import (  # noqa: F401
    Field,
    WebForm,
    ResourceError,
    ResourceType,
    all_form_fields,
    answer_daemon_check,
    choose_placement,
    daemon_capabilities,
    folder_picker,
    by_web_form,
    get,
    known_types,
    merge_patch,
    register,
    split_label,
    unregister,
    web_forms,
)
