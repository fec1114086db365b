from django.conf import settings
from django.conf.urls.i18n import i18n_patterns
from django.contrib import admin
from django.urls import URLPattern, URLResolver, include, path

from calculator.api import api
from calculator.web import views
from calculator.web.i18n import switch_language

urlpatterns: list[URLPattern | URLResolver] = [
    path("healthz", views.healthz, name="healthz"),
    path("_ping", views.ping, name="ping"),
    path("lang/<str:code>", switch_language, name="switch_language"),
    path("api/v1/", api.urls),
]
urlpatterns += i18n_patterns(
    path("", include("calculator.urls")),
    path(settings.ADMIN_URL, admin.site.urls),
    prefix_default_language=False,
)

handler500 = "calculator.web.views.server_error"
