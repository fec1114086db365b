from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class CalculatorConfig(AppConfig):
    name = "calculator"
    verbose_name = _("LLM memory calculator")
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # The admin lives in the catalogue room, not where admin.autodiscover() looks.
        from calculator.catalogue import admin  # noqa: F401
