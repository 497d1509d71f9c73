"""The summary tables' options have one home (profkit._summary.SummaryOptions):
every entry point takes the same options with the same defaults, checks them
there, and documents them from there."""

import dataclasses
import inspect

import pytest

from profkit import Profiler, ProfilerResult, RecordEvent, SortedKeys, SummaryView, _C, _summary, cli, cross_rank
from profkit._summary import TIME_UNITS, SummaryOptions

# The public entry points, whose signatures are written out for help() and IDEs.
ENTRY_POINTS = [Profiler.summary, ProfilerResult.summary, ProfilerResult.summary_data]
FIELDS = [f.name for f in dataclasses.fields(SummaryOptions)]


@pytest.mark.parametrize("entry", ENTRY_POINTS, ids=lambda f: f.__qualname__)
def test_every_entry_point_takes_the_options_with_their_defaults(entry):
    parameters = list(inspect.signature(entry).parameters.values())[1:]  # after self
    assert [p.name for p in parameters] == FIELDS, f"{entry.__qualname__}: add or remove the option there too"
    defaults = SummaryOptions()
    for p in parameters:
        assert p.default == getattr(defaults, p.name), f"{entry.__qualname__}({p.name}=...)"


@pytest.mark.parametrize("entry", ENTRY_POINTS, ids=lambda f: f.__qualname__)
def test_help_shows_what_each_option_means(entry):
    for name in FIELDS:
        assert f"\n        {name}: " in entry.__doc__, name


def test_options_are_checked_when_made():
    with pytest.raises(ValueError, match="time_unit must be one of 's', 'ms', 'us', 'ns'; got 'min'"):
        SummaryOptions(time_unit="min")
    with pytest.raises(ValueError, match="views is empty"):
        SummaryOptions(views=[])
    options = SummaryOptions(sorted_by="CPUMin", views=[SummaryView.UDFView, "OverView"], row_limit=2**40)
    assert options.engine_arguments() == {
        "sorted_by": 3,
        "op_detail": True,
        "thread_sep": False,
        "time_unit": 1,
        "views": (1 << 8) | (1 << 1),
        "row_limit": 0,  # past the C ABI's field: all
        "group_by_input_shape": False,
        "group_by_stack_n": 0,
    }
    # A generator of views is read once, when the options are made.
    once = SummaryOptions(views=(v for v in ["UDFView"]))
    assert once.engine_arguments()["views"] == once.engine_arguments()["views"] == 1 << 8


def test_options_and_keywords_are_not_mixed():
    with pytest.raises(TypeError, match="not both"):
        _summary.summary_text(_C.collect(), SummaryOptions(), time_unit="us")


def test_entry_points_give_the_same_tables_as_the_options_they_make(capsys):
    with Profiler(on_trace_ready=lambda p: None) as prof:
        with RecordEvent("work"):
            pass
        prof.step()
    capsys.readouterr()  # the Perf Summary
    result = prof.profiler_result
    options = SummaryOptions(sorted_by=SortedKeys.CPUMax, views=SummaryView.UDFView, time_unit="us")
    expected = _summary.summary_text(result.raw, options)
    assert result.summary(sorted_by=SortedKeys.CPUMax, views=SummaryView.UDFView, time_unit="us") == expected
    prof.summary(sorted_by=SortedKeys.CPUMax, views=SummaryView.UDFView, time_unit="us")
    assert capsys.readouterr().out == expected + "\n"
    data = result.summary_data(views=SummaryView.UDFView, time_unit="us")
    assert data["UDFView"].rows == _summary.summary_data(result.raw, options)["UDFView"].rows
    # The Profiler gives them too, as it prints them (the README promised it).
    assert prof.summary_data(views=SummaryView.UDFView, time_unit="us")["UDFView"].rows == data["UDFView"].rows
    with pytest.raises(ValueError, match="row_limit must be a positive int"):
        prof.summary(row_limit=0)


def test_a_profiler_without_a_window_says_so_before_judging_the_options():
    with pytest.raises(RuntimeError, match="no trace has been collected yet"):
        Profiler(on_trace_ready=lambda p: None).summary(time_unit="min")
    with pytest.raises(RuntimeError, match=r"Profiler.summary_data\(\): no trace has been collected yet"):
        Profiler(on_trace_ready=lambda p: None).summary_data()


def test_the_command_line_has_a_flag_for_every_option_and_the_same_defaults():
    # --time-unit applies to the cross-rank view too; every other option is a table option.
    assert set(cli._TABLE_OPTIONS) | {"time_unit"} == set(FIELDS)
    summary = next(
        action.choices["summary"] for action in cli._build_parser()._actions if getattr(action, "choices", None)
    )
    time_unit = next(a for a in summary._actions if a.dest == "time_unit")
    assert time_unit.default == SummaryOptions.time_unit and tuple(time_unit.choices) == TIME_UNITS


def test_the_cross_rank_view_refuses_a_time_unit_as_the_tables_do():
    summary = cross_rank.CrossRankSummary(ranks=[], slowest=None, fastest=None, most_computation=None)
    with pytest.raises(ValueError) as tables:
        SummaryOptions(time_unit="min")
    with pytest.raises(ValueError) as ranks:
        summary.text("min")
    assert str(ranks.value) == str(tables.value)
