"""Issue 36: every public method of ProviderSandbox (its own and those it inherits from
AsyncSandbox / sync.Sandbox: create, connect, ...) and of what it hands out (`server` and its
groups, the terminal), async and blocking, documents each parameter with `:param`."""
from __future__ import annotations

import inspect

import pytest
from agent_sandbox import provider as async_provider
from agent_sandbox.sync import provider as sync_provider

MODULES = (async_provider, sync_provider)


def public_methods(module):
    """(qualified name, function) of each public method of the module's own public classes,
    inherited ones included."""
    for class_name, cls in vars(module).items():
        if class_name.startswith("_") or not inspect.isclass(cls) \
                or cls.__module__ != module.__name__:
            continue
        for name in dir(cls):
            member = inspect.getattr_static(cls, name)
            function = member.__func__ if isinstance(member, (classmethod, staticmethod)) \
                else member
            if name.startswith("_") or not inspect.isfunction(function):
                continue
            yield f"{module.__name__}.{class_name}.{name}", function


def undocumented(function) -> list[str]:
    doc = inspect.getdoc(function) or ""
    names = [p for p in inspect.signature(function).parameters if p not in ("self", "cls")]
    return [p for p in names if f":param {p}:" not in doc]


@pytest.mark.parametrize("module", MODULES, ids=lambda m: m.__name__)
def test_every_parameter_has_a_param_line(module):
    methods = dict(public_methods(module))
    for name in ("server_on", "create", "connect", "run_code"):
        assert f"{module.__name__}.ProviderSandbox.{name}" in methods
    assert len(methods) > 30, sorted(methods)
    missing = {name: gaps for name, function in methods.items()
               if (gaps := undocumented(function))}
    assert not missing, missing


def test_the_check_sees_a_missing_param():
    def documented(path: str, depth: int = 1) -> None:
        """Lists.

        :param path: where
        """
    assert undocumented(documented) == ["depth"]
