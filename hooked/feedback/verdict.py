"""The verdict on one exercise: what grading reports, the notebook shows and Gradescope exports."""

import dataclasses

STATUSES = ("passed", "failed", "not_attempted", "error")


@dataclasses.dataclass
class Result:
    lesson: str
    exercise: str
    status: str
    message: str
    graded_file: str = ""
    output: str = ""
    location: str = ""  # where the exercise is written, e.g. "lessons/01_tensor_hooks.py line 241"
    mistake: str = None  # the id of the named mistake the check recognized, "01.double_grad.in-place"
    mistake_what: str = None  # what that mistake is, in one line, when the grader knows it

    def as_report_entry(self):
        return {"lesson": self.lesson, "exercise": self.exercise,
                "status": self.status, "message": self.message, "mistake": self.mistake}

    def notebook_text(self):
        mark = {"passed": "✅", "failed": "❌", "not_attempted": "⏳", "error": "⚠️"}[self.status]
        named = f"\n(mistake {self.mistake})" if self.mistake else ""
        return f"{mark} {self.exercise}: {self.message}{named}"
