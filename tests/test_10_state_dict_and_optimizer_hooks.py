"""Grades lesson 10, state-dict and optimizer hooks: one test per exercise, in the lesson's order."""

from hooked.pytest_plugin import exercise_test

test_migrate_checkpoint_keys = exercise_test("10_state_dict_and_optimizer_hooks", "migrate_checkpoint_keys")
test_attach_weight_ema = exercise_test("10_state_dict_and_optimizer_hooks", "attach_weight_ema")
