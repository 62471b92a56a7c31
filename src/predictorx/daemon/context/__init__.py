"""What the agent sees about its project (R-CTX-1 … R-CTX-5, R-LD-6), in the order the daemon
uses it: `types` (the data: a claim's `TaskContext`, and handles of what was written), `resourcesjson`
(`.predictorx/project/resources.json` in the working directory), `render` (the markdown of
``## Project Context`` and ``## Repositories``), `block` (that markdown between markers in the
provider's instruction file, taken out byte-exactly), `record` + `recovery` (the undo record kept
before the person's folder changes, and a killed daemon's next start using it), `prepare` (all of
it best effort: `prepare_context`). Import from the module that holds a name.
"""
