package io.vivarium.itests.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;

import org.junit.jupiter.api.Test;

class BenchReportTest {
    static final Goal RATIO = Goal.atMost("exec / bare", 0.5, "×", 7);
    static final Goal RATE = Goal.atLeast("creates per second", 100, "/s", 22);
    static final Goal COLLECTED = Goal.holds("class loader collected", 4);

    @Test
    void goalsCompareAsTheirBoundSaysAndNothingMeasuredNeverMeetsOne() {
        assertTrue(RATIO.met(0.5));
        assertFalse(RATIO.met(0.51));
        assertFalse(Goal.below("stall", 100, "ms", 7).met(100));
        assertTrue(RATE.met(100));
        assertTrue(Goal.exactly("failed requests", 0, "", 4).met(0));
        assertFalse(Goal.exactly("failed requests", 0, "", 4).met(1));
        assertFalse(RATIO.met(Double.NaN));
        assertEquals("≤ 0.5× (issue 7)", RATIO.text());
        assertEquals("≥ 100/s (issue 22)", RATE.text());
        assertEquals("< 2000 ms (issue 12)", Goal.below("start", 2000, "ms", 12).text());
        assertEquals("yes (issue 4)", COLLECTED.text());
    }

    @Test
    void numbersGetTheDigitsTheirSizeCallsFor() {
        assertEquals("0.92×", RATIO.format(0.9234));
        assertEquals("12.00×", RATIO.format(12));
        assertEquals("3.77 ms", Goal.atMost("x", 1, "ms", 1).format(3.7712));
        assertEquals("78.5 ms", Goal.atMost("x", 1, "ms", 1).format(78.52));
        assertEquals("237 ms", Goal.atMost("x", 1, "ms", 1).format(236.65));
        assertEquals("0", Goal.exactly("x", 0, "", 1).format(0));
    }

    @Test
    void aCheckedGoalSaysPassOrFailBesideTheFigureAndInTheGoalTable() {
        BenchReport report = new BenchReport("ExecBenchmark", List.of(RATIO, RATE, COLLECTED));
        report.add(Table.latencies().latency("exec", List.of(1.0, 2.0, 3.0)));

        assertEquals("0.61× (goal ≤ 0.5× (issue 7): FAIL)", report.check(RATIO, 0.61));
        report.check(RATE, 120.0);
        report.check(COLLECTED, true, "yes, 25 ms after the last cycle");
        String text = report.render();

        assertTrue(text.startsWith("| measurement | n | p50 ms | p99 ms |\n|---|---|---|---|\n| exec | 3 | 2 | 3 |\n"), text);
        assertTrue(text.contains("| exec / bare | ≤ 0.5× (issue 7) | 0.61× | **FAIL** |\n"
                + "| creates per second | ≥ 100/s (issue 22) | 120/s | PASS |\n"
                + "| class loader collected | yes (issue 4) | yes, 25 ms after the last cycle | PASS |\n"), text);
        assertTrue(text.matches("(?s).*\nRun: \\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d–\\d\\d:\\d\\d UTC; load average .*\n"), text);
        assertEquals(3, BenchDocs.goalRows(text).size(), "the goal table is what BenchDocs reads");
        assertFalse(report.allMet());
    }

    @Test
    void aGoalNotCheckedIsListedAsNotRunNeverAsMet() {
        BenchReport report = new BenchReport("ExecBenchmark", List.of(RATIO, RATE));
        report.check(RATIO, 0.4);
        report.notRun(RATE, "gVisor is not installed");

        List<List<String>> rows = BenchDocs.goalRows(report.render());
        assertEquals("PASS", rows.get(0).get(3));
        assertEquals("not run: gVisor is not installed", rows.get(1).get(3));
        assertFalse(report.allMet());
    }

    @Test
    void aBenchmarkThatCannotRunSaysWhyAndListsEveryGoalAsNotRun() {
        BenchReport report = new BenchReport("ExecBenchmark", Bench.declaredGoals(BenchReportTest.class));
        report.add("figures that must not be kept");
        report.notRun("needs bubblewrap");
        String text = report.render();

        assertTrue(text.startsWith("Not run: needs bubblewrap.\n"), text);
        assertFalse(text.contains("figures that must not be kept"), text);
        assertEquals(List.of("not run: needs bubblewrap", "not run: needs bubblewrap", "not run: needs bubblewrap"),
                BenchDocs.goalRows(text).stream().map(r -> r.get(3)).toList());
    }

    @Test
    void aFailedRunKeepsWhatItMeasuredSaysTheFailureAndDoesNotPassWhatItDidNotReach() {
        BenchReport report = new BenchReport("ExecBenchmark", List.of(RATIO, RATE));
        report.check(RATIO, 0.4);
        report.failed(new AssertionError("create failed: 503\nmore lines"));
        String text = report.render();

        assertTrue(text.contains("**the run failed: create failed: 503**"), text);
        assertEquals(List.of("PASS", "not run: the run failed: create failed: 503"),
                BenchDocs.goalRows(text).stream().map(r -> r.get(3)).toList());
    }

    @Test
    void aGoalThatWasNotDeclaredIsABug() {
        BenchReport report = new BenchReport("ExecBenchmark", List.of(RATIO));
        assertThrows(IllegalArgumentException.class, () -> report.check(RATE, 1));
    }
}
