"""Cairn settings: the only settings module. Every value comes from the environment (or `.env`).

Two run modes share these settings:
- embedded default: nothing set -> SQLite file in the working directory, local-memory cache, Celery on the
  filesystem transport (no server needed);
- production: DATABASE_URL (PostgreSQL, psycopg 3) and REDIS_URL (cache, throttles and the Celery broker).
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import environ
from csp.constants import NONE, SELF
from django.core.exceptions import ImproperlyConfigured

from checkpoints.parts import disabled_parts

BASE_DIR = Path(__file__).resolve().parent.parent

env = environ.Env()
# `.env` is optional; real environment variables always win over it.
environ.Env.read_env(BASE_DIR / ".env", overwrite=False)

DEBUG = env.bool("DEBUG", default=False)
# pytest loads these settings before any test code can set the environment.
TESTING = "pytest" in sys.modules

SECRET_KEY = env.str("SECRET_KEY", default="")
if not SECRET_KEY:
    if not (DEBUG or TESTING):
        raise ImproperlyConfigured(
            "SECRET_KEY is not set. `make run` writes one to .env; in production set it in the environment."
        )
    SECRET_KEY = "insecure-dev-and-test-only-key"  # nosec B105 # only with DEBUG or under pytest; production refuses to start without one

ALLOWED_HOSTS = env.list("ALLOWED_HOSTS", default=["127.0.0.1", "localhost", "[::1]", "testserver"])
CSRF_TRUSTED_ORIGINS = env.list("CSRF_TRUSTED_ORIGINS", default=[])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "django_filters",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "csp",
    "axes",
    "checkpoints",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    # Static files (dashboard CSS/JS, the offline API docs) straight from gunicorn: no proxy needed.
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "checkpoints.api.middleware.ApiGuardMiddleware",
    # The browser's middleware, skipped for /api/ (API requests carry a key, no session or cookies).
    "checkpoints.api.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "checkpoints.api.middleware.AuthenticationMiddleware",
    "checkpoints.api.middleware.MessageMiddleware",
    # Sign-in throttling (checkpoints/services/login_throttle.py): the sign-in page says why it refuses.
    "axes.middleware.AxesMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "checkpoints.dashboard.middleware.DashboardContentSecurityPolicyMiddleware",
]

ROOT_URLCONF = "project.urls"
WSGI_APPLICATION = "project.wsgi.application"
ASGI_APPLICATION = "project.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

# --- Database --------------------------------------------------------------------------------------------
DATABASE_URL = env.str("DATABASE_URL", default="")
if DATABASE_URL:
    DATABASES = {"default": env.db_url_config(DATABASE_URL)}
    if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
        # Persistent connections with a health check so a restarted PostgreSQL is picked up without a
        # process restart (the first request after the restart gets a fresh connection).
        DATABASES["default"].setdefault("CONN_MAX_AGE", env.int("DB_CONN_MAX_AGE", default=60))
        DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
        # The same backend, with a health check that polls the socket instead of a round trip when quiet.
        DATABASES["default"]["ENGINE"] = "project.postgresql"
        options = DATABASES["default"].setdefault("OPTIONS", {})
        options.setdefault("connect_timeout", env.int("DB_CONNECT_TIMEOUT", default=5))
        # Prepared statements only where asked for (the hot cursor, checkpoints.storage.hot_cursor):
        # Django's default (None) switches them off altogether; the ORM's own queries are never prepared.
        options.setdefault("prepare_threshold", 2**31 - 1)
        # ... and planned once: a custom plan per execution costs more than the hot statements run for
        # (~0.3 ms of a save's 0.5 ms first statement); they are indexed lookups whose best plan does not
        # depend on the values bound. The ORM binds on the client and is not affected.
        options["options"] = f"{options.get('options', '')} -c plan_cache_mode=force_generic_plan".strip()
else:
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": env.str("SQLITE_PATH", default=str(BASE_DIR / "db.sqlite3")),
            "OPTIONS": {
                # IMMEDIATE takes the write lock at BEGIN, so concurrent writers queue instead of failing
                # with "database is locked" half-way through a transaction.
                "transaction_mode": "IMMEDIATE",
                "timeout": 30,
                "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=ON;",
            },
        }
    }
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# --- Cache (thread state, throttles) ----------------------------------------------------------------------
REDIS_URL = env.str("REDIS_URL", default="")
if REDIS_URL:
    CACHES = {
        "default": {
            "BACKEND": "checkpoints.cache.ResilientRedisCache",
            "LOCATION": REDIS_URL,
            "KEY_PREFIX": env.str("CACHE_KEY_PREFIX", default="cairn"),
            "TIMEOUT": env.int("CACHE_TIMEOUT", default=3600),
            "OPTIONS": {
                "socket_connect_timeout": env.float("REDIS_CONNECT_TIMEOUT", default=0.5),
                "socket_timeout": env.float("REDIS_SOCKET_TIMEOUT", default=0.5),
            },
        }
    }
else:
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.locmem.LocMemCache",
            "LOCATION": "cairn",
            "TIMEOUT": env.int("CACHE_TIMEOUT", default=3600),
        }
    }

# --- Auth, i18n, static -----------------------------------------------------------------------------------
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]
LOGIN_URL = "dashboard:login"
LOGIN_REDIRECT_URL = "dashboard:home"
LOGOUT_REDIRECT_URL = "dashboard:login"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = env.str("STATIC_ROOT", default=str(BASE_DIR / "staticfiles"))
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    # Compressed copies are made by `collectstatic` (the Procfile's release step); without it WhiteNoise
    # serves the files from their app folders (USE_FINDERS), so a bare `gunicorn` works too.
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
}
WHITENOISE_USE_FINDERS = True
# Before the first `collectstatic` STATIC_ROOT does not exist; the finders serve everything meanwhile.
warnings.filterwarnings("ignore", message=r"No directory at: .*staticfiles", category=UserWarning)

# --- Security ---------------------------------------------------------------------------------------------
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https") if env.bool("BEHIND_TLS_PROXY", False) else None
SESSION_COOKIE_SECURE = env.bool("SECURE_COOKIES", default=not DEBUG)
CSRF_COOKIE_SECURE = SESSION_COOKIE_SECURE
SESSION_COOKIE_HTTPONLY = True
CSRF_COOKIE_HTTPONLY = True
SECURE_SSL_REDIRECT = env.bool("SECURE_SSL_REDIRECT", default=False)
SECURE_HSTS_SECONDS = env.int("SECURE_HSTS_SECONDS", default=0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = SECURE_HSTS_SECONDS > 0
SECURE_HSTS_PRELOAD = SECURE_HSTS_SECONDS > 0
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"
# The dashboard has no inline scripts or styles and loads nothing from elsewhere (docs/security.md).
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": [SELF],
        "script-src": [SELF],
        "style-src": [SELF],
        "img-src": [SELF, "data:"],
        "object-src": [NONE],
        "base-uri": [NONE],
        "form-action": [SELF],
        "frame-ancestors": [NONE],
    }
}

# --- Request limits (docs/configuration.md) ---------------------------------------------------------------
CAIRN_MAX_BODY_BYTES = env.int("CAIRN_MAX_BODY_BYTES", default=32 * 1024 * 1024)
CAIRN_MAX_JSON_DEPTH = env.int("CAIRN_MAX_JSON_DEPTH", default=128)
# The web worker (project/gunicorn_worker.py) answers 408 to a request not received in full within this, and
# closes a connection whose response the client has not taken in full within this (docs/operating.md).
CAIRN_REQUEST_READ_TIMEOUT_SECONDS = env.float("CAIRN_REQUEST_READ_TIMEOUT_SECONDS", default=60.0)
# Django's own guard must not fire before ours (ours answers with the 413 envelope).
DATA_UPLOAD_MAX_MEMORY_SIZE = CAIRN_MAX_BODY_BYTES + 1024
# How far in the future a client-supplied checkpoint created_at may be (clock skew allowance).
CAIRN_MAX_CLOCK_SKEW_SECONDS = env.int("CAIRN_MAX_CLOCK_SKEW_SECONDS", default=300)
CAIRN_MAX_TTL_SECONDS = env.int("CAIRN_MAX_TTL_SECONDS", default=10 * 365 * 24 * 3600)
# A diff compares at most this many JSON values (both documents together): its cost grows with them, and it
# runs in the request. docs/checkpoints.md.
CAIRN_DIFF_MAX_NODES = env.int("CAIRN_DIFF_MAX_NODES", default=100_000)

# --- REST framework ---------------------------------------------------------------------------------------
CAIRN_THROTTLE_RATE = env.str("CAIRN_THROTTLE_RATE", default="6000/min")
# How long a process trusts a remembered API key without reloading it. Changes made through Cairn apply at
# once on every process; this bounds changes written around it (raw SQL). docs/api/index.md.
CAIRN_API_KEY_CACHE_SECONDS = env.float("CAIRN_API_KEY_CACHE_SECONDS", default=30.0)
# Performance parts turned off, for the benchmark's A/B runs only (docs/architecture.md, "The rent of each
# part"): each then takes the plain path it replaces.
CAIRN_DISABLED_PARTS = disabled_parts(env.str("CAIRN_DISABLED_PARTS", default=""))
# Sign-in throttle (dashboard and admin): this many failures per username or client address lock it for the
# rest of the window.
CAIRN_LOGIN_MAX_FAILURES = env.int("CAIRN_LOGIN_MAX_FAILURES", default=10)
CAIRN_LOGIN_WINDOW_SECONDS = env.int("CAIRN_LOGIN_WINDOW_SECONDS", default=900)
# Sign-in throttling is django-axes, counting per username and per client address in the shared cache, with
# the two settings above (docs/security.md).
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
AXES_HANDLER = "checkpoints.services.login_throttle.LoginThrottleHandler"
AXES_FAILURE_LIMIT = "checkpoints.services.login_throttle.failure_limit"
AXES_COOLOFF_TIME = "checkpoints.services.login_throttle.cool_off"
AXES_LOCKOUT_PARAMETERS = ["username", "ip_address"]  # each counted on its own
AXES_USERNAME_CALLABLE = "checkpoints.services.login_throttle.login_name"
AXES_CLIENT_IP_CALLABLE = "checkpoints.client_address.client_address"
AXES_LOCKOUT_CALLABLE = "checkpoints.services.login_throttle.lockout_response"
AXES_RESET_COOL_OFF_ON_FAILURE_DURING_LOCKOUT = False  # refused attempts do not lengthen a lock
AXES_DISABLE_ACCESS_LOG = True  # the audit log records locks; sign-ins need no second log
AXES_ENABLE_ADMIN = False  # its tables stay empty: the counts are in the cache
AXES_VERBOSE = False
# How many proxies (TLS terminator, load balancer) stand in front: the client's address is then the one the
# outermost of them appended to X-Forwarded-For. With 0 the header is ignored (clients can forge it).
CAIRN_TRUSTED_PROXIES = env.int("CAIRN_TRUSTED_PROXIES", default=0)

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": ["checkpoints.api.auth.ApiKeyAuthentication"],
    "DEFAULT_PERMISSION_CLASSES": ["checkpoints.api.permissions.HasScope"],
    "DEFAULT_THROTTLE_CLASSES": ["checkpoints.api.throttling.ApiKeyRateThrottle"],
    "DEFAULT_PARSER_CLASSES": ["checkpoints.api.parsers.StrictJSONParser"],
    "DEFAULT_RENDERER_CLASSES": ["checkpoints.api.renderers.CairnJSONRenderer"],
    "DEFAULT_CONTENT_NEGOTIATION_CLASS": "checkpoints.api.negotiation.CairnContentNegotiation",
    "DEFAULT_PAGINATION_CLASS": None,
    "DEFAULT_FILTER_BACKENDS": [],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "checkpoints.api.errors.exception_handler",
    "UNAUTHENTICATED_USER": None,
    "DATETIME_FORMAT": "%Y-%m-%dT%H:%M:%S.%fZ",
    "STRICT_JSON": True,
    "UNICODE_JSON": True,
    "COMPACT_JSON": True,
    "TEST_REQUEST_DEFAULT_FORMAT": "json",
}

SPECTACULAR_SETTINGS = {
    "TITLE": "Cairn API",
    "DESCRIPTION": "Memory for LLM agents: checkpoints, threads and messages, medallions.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "COMPONENT_SPLIT_REQUEST": True,
    "SCHEMA_PATH_PREFIX": "/api/v1/",
    "SERVE_PERMISSIONS": ["rest_framework.permissions.AllowAny"],
    "SERVE_AUTHENTICATION": [],
    "APPEND_COMPONENTS": {
        "securitySchemes": {"ApiKey": {"type": "http", "scheme": "bearer", "description": "Cairn API key"}}
    },
    "SECURITY": [{"ApiKey": []}],
    # JSON-only request bodies, closed request objects, the documented errors (checkpoints.api.schema).
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "checkpoints.api.schema.document_contract",
    ],
}

# --- Celery (docs/retention.md) -------------------------------------------------------
CAIRN_DATA_DIR = Path(env.str("CAIRN_DATA_DIR", default=str(BASE_DIR / ".cairn")))
CELERY_TASK_TIME_LIMIT = env.int("CELERY_TASK_TIME_LIMIT", default=600)
CELERY_TASK_SOFT_TIME_LIMIT = env.int("CELERY_TASK_SOFT_TIME_LIMIT", default=540)
# Redis re-delivers a message no worker acknowledged within this time (its worker was killed): longer than
# the hard time limit and the longest retry countdown, so a running task is not handed out twice (and a
# duplicate would do nothing anyway: the job claim is a conditional UPDATE).
CAIRN_BROKER_VISIBILITY_TIMEOUT = env.int("CELERY_VISIBILITY_TIMEOUT", default=CELERY_TASK_TIME_LIMIT + 300)
CELERY_BROKER_URL = env.str("CELERY_BROKER_URL", default=REDIS_URL or "filesystem://")
if CELERY_BROKER_URL == "filesystem://":
    # Embedded mode: a broker that is a directory, so worker and beat need no server.
    _broker_dir = Path(CAIRN_DATA_DIR) / "broker"
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(_broker_dir / "queue"),
        "data_folder_out": str(_broker_dir / "queue"),
        "processed_folder": str(_broker_dir / "processed"),
        "store_processed": False,
        # Exchange tables (broadcasts, remote control); kombu's default is ./control in the working dir.
        "control_folder": str(_broker_dir / "control"),
    }
else:
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "socket_connect_timeout": 2,
        "socket_timeout": 5,
        "visibility_timeout": CAIRN_BROKER_VISIBILITY_TIMEOUT,
    }
# One queue per deployment; tests name their own so parallel runs never consume each other's messages.
CELERY_TASK_DEFAULT_QUEUE = env.str("CELERY_TASK_DEFAULT_QUEUE", default="celery")
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# Publishing must fail fast when the broker is down: the API answers 503 instead of hanging.
CELERY_TASK_PUBLISH_RETRY = False
CELERY_BROKER_CONNECTION_TIMEOUT = env.float("CELERY_BROKER_CONNECTION_TIMEOUT", default=2.0)
CELERY_TIMEZONE = "UTC"
CELERY_BEAT_SCHEDULE_FILENAME = str(Path(CAIRN_DATA_DIR) / "celerybeat-schedule")
# Periodic tasks: (schedule entry, task in checkpoints.tasks, interval setting, default interval in seconds).
CELERY_BEAT_SCHEDULE = {
    entry: {"task": f"checkpoints.tasks.{task}", "schedule": env.float(interval, default=default)}
    for entry, task, interval, default in (
        ("retention-sweep", "sweep_expired_checkpoints", "CAIRN_SWEEP_INTERVAL_SECONDS", 60.0),
        ("store-sweep", "sweep_expired_store_items", "CAIRN_SWEEP_INTERVAL_SECONDS", 60.0),
        ("tombstone-purge", "purge_tombstones", "CAIRN_PURGE_INTERVAL_SECONDS", 3600.0),
        ("idle-thread-expiry", "expire_idle_threads", "CAIRN_IDLE_EXPIRY_INTERVAL_SECONDS", 3600.0),
        ("job-reaper", "reap_abandoned_jobs", "CAIRN_JOB_REAP_INTERVAL_SECONDS", 300.0),
        ("value-collector", "collect_values", "CAIRN_VALUE_COLLECT_INTERVAL_SECONDS", 3600.0),
    )
}
CAIRN_SWEEP_BATCH_SIZE = env.int("CAIRN_SWEEP_BATCH_SIZE", default=1000)
# Packed checkpoints' parts (docs/storage.md) that nothing names are deleted once no save has used them for
# this long; it bounds how long a save may take between storing its parts and inserting its checkpoint.
CAIRN_VALUE_GRACE_SECONDS = env.int("CAIRN_VALUE_GRACE_SECONDS", default=3600)
# A job "running" this long lost its worker and no redelivery took it over: the reaper marks it failed.
# Longer than the hard time limit plus the broker's redelivery delay, so a redelivery gets its chance first.
CAIRN_JOB_ABANDONED_AFTER_SECONDS = env.int(
    "CAIRN_JOB_ABANDONED_AFTER_SECONDS",
    default=CELERY_TASK_TIME_LIMIT + CAIRN_BROKER_VISIBILITY_TIMEOUT + 300,
)
# A job "queued" this long never reached a worker (message lost, no worker running): the reaper fails it.
CAIRN_JOB_QUEUED_TIMEOUT_SECONDS = env.int("CAIRN_JOB_QUEUED_TIMEOUT_SECONDS", default=24 * 3600)

# --- LLM providers (checkpoints/llm is the only code that talks to a model) -------------------------------
CAIRN_LLM = {
    "PROVIDER": env.str("CAIRN_LLM_PROVIDER", default="extractive"),
    "BASE_URL": env.str("CAIRN_LLM_BASE_URL", default="https://api.openai.com/v1"),
    "API_KEY": env.str("CAIRN_LLM_API_KEY", default=""),
    "MODEL": env.str("CAIRN_LLM_MODEL", default="gpt-4o-mini"),
    "TIMEOUT_SECONDS": env.float("CAIRN_LLM_TIMEOUT_SECONDS", default=60.0),
    "MAX_ATTEMPTS": env.int("CAIRN_LLM_MAX_ATTEMPTS", default=3),
    # First retry delay after a timeout/429/5xx; doubles per attempt (with jitter), capped at 30 s.
    "BACKOFF_SECONDS": env.float("CAIRN_LLM_BACKOFF_SECONDS", default=1.0),
}

# Embeddings for the store's search by meaning (checkpoints/llm/embeddings.py, docs/store.md).
CAIRN_EMBEDDINGS = {
    "PROVIDER": env.str("CAIRN_EMBEDDINGS_PROVIDER", default="wordllama"),
    "BASE_URL": env.str("CAIRN_EMBEDDINGS_BASE_URL", default="https://api.openai.com/v1"),
    "API_KEY": env.str("CAIRN_EMBEDDINGS_API_KEY", default=""),
    "MODEL": env.str("CAIRN_EMBEDDINGS_MODEL", default="text-embedding-3-small"),
    "TIMEOUT_SECONDS": env.float("CAIRN_EMBEDDINGS_TIMEOUT_SECONDS", default=30.0),
    # auto: a remote provider embeds in a Celery task after the write commits, the local model inline;
    # always / never force one way (checkpoints/services/embedding.py).
    "IN_BACKGROUND": env.str("CAIRN_EMBEDDINGS_IN_BACKGROUND", default="auto"),
}
# Store items whose vectors one web process keeps in memory for search by meaning, all workspaces together.
CAIRN_STORE_VECTOR_CACHE_ITEMS = env.int("CAIRN_STORE_VECTOR_CACHE_ITEMS", default=400_000)

# --- Logging ----------------------------------------------------------------------------------------------
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": env.str("LOG_LEVEL", default="INFO")},
    "loggers": {"django.request": {"level": "ERROR"}},
}
