"""The multi-seed runner: where runs are executed (:mod:`.executors`) and how they are
scheduled (:mod:`.schedule`)."""
