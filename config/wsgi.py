import gc
import os
from importlib import import_module

from django.conf import settings
from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

application = get_wsgi_application()

# Import the views, the estimator and the forms now rather than at the first request, then move
# every object that exists (about 110,000: modules, classes, translations) out of the garbage
# collector's reach: they live as long as the worker. Without this, each full collection walked
# them all, an 80-190 ms pause every thousand or so recomputes (issue 16).
import_module(settings.ROOT_URLCONF)
gc.freeze()
