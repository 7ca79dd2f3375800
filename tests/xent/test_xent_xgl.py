"""XGL: parsing, hostile programs, string functions and each instruction's runtime semantics.

Runs against the model-free WordJudge (pipeline/xent/testing.py): a scored token costs 2 bits, or
0.5 bits when a prefix word shares its first four letters.
"""

from __future__ import annotations

import asyncio

import pytest

from pipeline.xent.functions import (
    cut_after,
    cut_before,
    num_words,
    only_uses_chars,
    only_uses_words,
    remove_common_words,
)
from pipeline.xent.runtime import ENSURE_LIMIT, ElicitRequest, MoveOutcome, RoundResult, run_round
from pipeline.xent.testing import WordJudge
from pipeline.xent.xgl import ParseError, parse_program


class Script:
    """A seat answering from a list of moves (the last one repeats); keeps every request it saw."""

    def __init__(self, *moves: str) -> None:
        self.moves = list(moves)
        self.requests: list[ElicitRequest] = []

    async def ask(self, request: ElicitRequest) -> MoveOutcome:
        self.requests.append(request)
        move = self.moves.pop(0) if len(self.moves) > 1 else self.moves[0]
        return MoveOutcome(move, reply=f"<move>{move}</move>")


def play(text: str, **seats: Script) -> RoundResult:
    return asyncio.run(run_round(parse_program(text), seats, WordJudge()))


def totals(result: RoundResult) -> dict[str, float]:
    out: dict[str, float] = {}
    for reward in result.rewards:
        out[reward.role] = out.get(reward.role, 0.0) + reward.total
    return out


# -- string functions --------------------------------------------------------------------------
def test_cut_operators_with_present_absent_and_empty_separators() -> None:
    assert cut_before("one two three", " two") == "one"
    assert cut_after("one two three", " two") == " three"
    assert cut_before("one two", "zzz") == "one two"  # absent: all of a
    assert cut_after("one two", "zzz") == ""  # absent: empty
    assert cut_before("one two", "") == "one two"  # empty separator: all of a
    assert cut_after("one two", "") == ""
    assert cut_before("a-b-c", "-") == "a" and cut_after("a-b-c", "-") == "b-c"  # first occurrence


def test_cut_operators_in_a_program() -> None:
    result = play('assign(s="alpha beta gamma", t=" beta")\nassign(s1=s // t, s2=s % t, s3=s // "", x=s % "zz")')
    regs = result.registers
    assert (regs["s1"], regs["s2"], regs["s3"], regs["x"]) == ("alpha", " gamma", "alpha beta gamma", "")


def test_remove_common_words_whole_words_case_and_punctuation() -> None:
    assert remove_common_words("The cat sat", "the dog") == "cat sat"  # case-insensitive
    assert remove_common_words("cats scatter", "cat") == "cats scatter"  # whole words only
    assert remove_common_words("Dog, cat! bird.", "DOG bird") == ", cat! ."  # punctuation splits words
    assert remove_common_words("rain-coat", "coat.") == "rain-coat"  # its word is "raincoat", not "coat"
    assert remove_common_words("anything", "") == "anything"
    assert remove_common_words("", "words") == ""


def test_word_predicates() -> None:
    assert num_words("Hello, world! it's") == 3  # distinct words: hello, world, its
    assert only_uses_words("a b c", "b a") and not only_uses_words("a b c", "B a")  # case-sensitive
    assert not only_uses_words("a b", "a d")
    assert only_uses_chars("abc ", "cab ba") and not only_uses_chars("abc", "cab ba")  # space must be listed


# -- parsing -----------------------------------------------------------------------------------
def test_a_program_over_64_lines_is_refused_and_64_is_fine() -> None:
    ok = "\n".join(['assign(x="a")'] * 64)
    parse_program(ok)
    with pytest.raises(ParseError, match="at most 64 lines"):
        parse_program(ok + "\n# one more")


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ('assign(x=__import__("os").system("id"))', "only the methods join, split can be called"),
        ("assign(x=s.__class__)", "Attribute is not allowed"),
        ("assign(x=(lambda: 1)())", "calls only to functions"),
        ("assign(l=[c for c in l for d in l])", "exactly one `for`"),
        ("assign(x=s @ t)", "operator MatMult is not allowed"),
        ("assign(x=2 ** 10 ** 10)", "operator Pow is not allowed"),
        ("assign(x=999999999999)", "integer literals are at most"),
        ("assign(x=open)", "'open' is an unknown name"),
        ("assign(x=eval(s))", "calls only to functions"),
        ("assign(x=s[::2])", "no step"),
        ("import os", "not a valid instruction"),
        ("x = 1", "not a valid instruction"),
        ("print(s)", "expected an instruction call"),
        ("assign(q=s)", "'q' is not a register"),
        ("assign(__builtins__=s)", "not a register"),
        ("elicit(x)", "needs at least one register and a max_tokens"),
        ("elicit(a, 10)", "cannot receive a move"),
        ("reward(xed(s | x), xent(s))", "exactly one value"),
        ("beacon(flag_3)", "expected beacon(flag_1) or beacon(flag_2)"),
        ("replay(flag_1, 5000)", "an integer 0-1000"),
        ('assign(x=xent(s, prefix="a"))', "take no keyword arguments"),
        ("assign(x=f'{s}')", "JoinedStr is not allowed"),
        ("assign(x=b'bytes')", "a bytes literal is not allowed"),
        ("assign(x=(y := s))", "NamedExpr is not allowed"),
        ("assign(x=s if t else y)", "IfExp is not allowed"),
        ("assign(x=black)", "'black' is a player here"),
    ],
)
def test_hostile_and_malformed_lines_are_refused_with_line_and_column(line: str, expected: str) -> None:
    with pytest.raises(ParseError) as caught:
        parse_program(f'# a game\nassign(s="story")\n{line}\n')
    assert caught.value.line == 3
    assert caught.value.column >= 1
    assert expected in str(caught.value)
    assert str(caught.value).startswith("line 3, column")


def test_parse_error_points_at_the_offending_column() -> None:
    with pytest.raises(ParseError) as caught:
        parse_program("assign(x=s + t.upper)")
    assert (caught.value.line, caught.value.column) == (1, 14)


def test_deep_nesting_and_huge_lines_are_refused() -> None:
    with pytest.raises(ParseError):
        parse_program("assign(x=" + "(" * 500 + "s" + ")" * 500 + ")")
    with pytest.raises(ParseError, match="characters"):
        parse_program('assign(x="' + "a" * 9000 + '")')
    with pytest.raises(ParseError, match="too complex"):
        parse_program("assign(x=" + " + ".join(["s"] * 300) + ")")


def test_static_registers_only_in_the_setup_lines() -> None:
    parse_program('assign(a="instance", s=story())\nelicit(x, 5)')
    with pytest.raises(ParseError, match="static register"):
        parse_program("elicit(x, 5)\nassign(a=x)")


def test_description_and_meta_come_from_the_header() -> None:
    program = parse_program('# Title: what to do.\n# More words.\n# @opponent: white\nassign(s="x")\n# later comment\n')
    assert program.description == "Title: what to do.\nMore words."
    assert program.meta == {"opponent": "white"}


# -- runtime semantics -------------------------------------------------------------------------
def test_assign_elicit_reveal_reward_condense() -> None:
    black = Script("dogs chasing balls dog")
    result = play(
        'assign(s="the dog chased a ball")\nelicit(x, 10)\nassign(x1=remove_common_words(x, s))\n'
        "reveal(x1)\nreward(xed(s | x1))",
        black=black,
    )
    assert result.error is None
    assert result.registers["x1"] == "dogs chasing balls"
    # tokens " dog", " chased", " a", " ball": chased (chas) and ball (ball) are helped: 2 x 1.5 bits
    assert totals(result)["black"] == pytest.approx(3.0)
    reward = result.rewards[0]
    assert [t.token for t in reward.resolved.tokens] == [" dog", " chased", " a", " ball"]
    assert [t.bits for t in reward.resolved.tokens] == [0.0, 1.5, 0.0, 1.5]
    assert black.requests[0].visible == {"s": "the dog chased a ball"}  # black is omniscient


def test_measures_xent_nex_xed_dex_and_sums() -> None:
    result = play(
        'assign(s="one two three", t="two")\n'
        "reward(xent(s))\nreward(nex(s | t))\nreward(xed(s | t))\nreward(dex(s | t))\n"
        "reward(xent(s) - xent(t + s) + xed(s, t))"
    )
    values = [r.total for r in result.rewards if r.role == "black"]
    # xed(s, t): t is a pre-prompt of both sides (the reference's), so a bare s gains nothing
    assert values == pytest.approx([4.0, -2.5, 1.5, -1.5, 4.0 - 4.0 + 0.0])


def test_elicit_cuts_moves_to_max_tokens_and_defaults_to_black() -> None:
    black = Script("a b c d e f")
    result = play("elicit(x, 3)", black=black)
    assert result.registers["x"] == "a b c"
    assert result.moves[0].role == "black" and result.moves[0].register == "x"


def test_elicit_several_registers_for_a_named_player() -> None:
    alice = Script("first", "second")
    result = play("elicit(alice, x1, x2, 5)", alice=alice)
    assert (result.registers["x1"], result.registers["x2"]) == ("first", "second")
    assert [m.elicit_index for m in result.moves] == [0, 1]


def test_reveal_and_public_registers_decide_what_non_omniscient_players_see() -> None:
    alice, bob = Script("hello"), Script("bye")
    play(
        'assign(a="public static", s="secret story", p="public note", t="hidden")\n'
        'reveal(alice, s)\nreveal(bob, t + s // " story")\nelicit(alice, x, 5)\nelicit(bob, y, 5)',
        alice=alice,
        bob=bob,
    )
    assert alice.requests[0].visible == {"a": "public static", "p": "public note", "s": "secret story"}
    seen_by_bob = bob.requests[0].visible
    assert "s" not in seen_by_bob and "x" not in seen_by_bob
    assert seen_by_bob['t + s // " story"'] == "hiddensecret"


def test_zero_sum_black_white_and_env_gets_nothing() -> None:
    result = play(
        'assign(s="one two three")\nreward(black, xent(s))\nreward(white, xent(s | "two"))\nreward(env, xent(s))'
    )
    got = totals(result)
    assert got["black"] == pytest.approx(4.0 - 2.5)
    assert got["white"] == pytest.approx(-(4.0 - 2.5))
    assert "env" not in got
    indices = sorted((r.reward_index, r.role) for r in result.rewards)
    assert indices == [(0, "black"), (0, "white"), (1, "black"), (1, "white")]


def test_ensure_reasks_with_the_failed_condition_then_accepts() -> None:
    black = Script("far too many words here", "short one")
    result = play("elicit(x, 10)\nensure(num_words(x) <= 2)\nreward(xent(x))", black=black)
    assert result.error is None
    assert result.registers["x"] == "short one"
    assert len(black.requests) == 2
    assert black.requests[1].failed == ("num_words(x) <= 2",)
    assert black.requests[1].attempt == 2
    assert result.moves[0].attempts == 2 and len(result.moves) == 1
    assert result.ensure_failures == 1


def test_ensure_limit_ends_the_round_with_a_recorded_error() -> None:
    black = Script("never fits the rule")
    result = play("elicit(x, 10)\nensure(num_words(x) <= 1)\nreward(xent(x))", black=black)
    assert len(black.requests) == ENSURE_LIMIT + 1  # the reference re-asks 10 times, the 11th failure ends it
    assert result.error is not None and "ensure failed 11 times" in result.error
    assert result.error_line == 2
    assert result.rewards == []


def test_ensure_with_a_statement_asks_the_judge() -> None:
    black = Script("x")
    ok = play('elicit(x, 3)\nensure("this is true", is_true("true fact"), not is_false("true"))', black=black)
    assert ok.error is None
    bad = play('elicit(x, 3)\nensure("this is wrong")', black=Script("x"))
    assert "ensure failed" in (bad.error or "")


def test_beacon_and_replay_loop_a_fixed_number_of_times() -> None:
    alice = Script("one", "two", "three", "four")
    result = play(
        'beacon(flag_1)\nelicit(alice, t, 3)\nreward(alice, xent(t + " more words"))\nreplay(flag_1, 2)', alice=alice
    )
    assert [m.move for m in result.moves] == ["one", "two", "three"]
    assert [r.reward_index for r in result.rewards] == [0, 1, 2]


def test_nested_replay_runs_the_inner_loop_fully_each_outer_pass() -> None:
    result = play(
        'assign(s="")\nbeacon(flag_1)\nassign(t="")\nbeacon(flag_2)\nassign(s=s + "i", t=t + "j")\n'
        "replay(flag_2, 1)\nreplay(flag_1, 2)"
    )
    assert result.registers["s"] == "i" * 6 and result.registers["t"] == "jj"


def test_runtime_type_errors_end_the_round_with_a_message() -> None:
    result = play('assign(s="a")\nassign(x=xent(s) + s)')
    assert result.error is not None and result.error.startswith("line 2:")
    assert "cannot compute" in result.error
    growth = play('assign(s="abcdefghij")\nbeacon(flag_1)\nassign(s=s + s)\nreplay(flag_1, 100)')
    assert growth.error is not None and "at most" in growth.error


def test_story_needs_a_built_map() -> None:
    result = play("assign(s=story())")
    assert result.error is not None and "build the map first" in result.error


def test_lists_and_len() -> None:
    result = play(
        'assign(l=["x", "y"])\nassign(l1=l + ["z"])\nassign(s=l1[2] + l[-1], t=first_n_tokens("a b c", 2))\n'
        "ensure(len(l1) == 3, len(s) == 2)"
    )
    assert result.error is None
    assert result.registers["s"] == "zy" and result.registers["t"] == "a b"
