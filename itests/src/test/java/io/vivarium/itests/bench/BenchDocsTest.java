package io.vivarium.itests.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Set;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class BenchDocsTest {
    private static final String DOC = """
            # Benchmarks

            Hand-written intro.

            <!-- bench:run -->
            the last run of record
            <!-- /bench:run -->

            <!-- bench:goals -->
            <!-- /bench:goals -->

            ## Exec: round trip

            What, contender, command: hand-written.

            <!-- bench:ExecBenchmark -->
            old exec figures

            | figure | goal | measured | result |
            |---|---|---|---|
            | exec / bare | ≤ 0.5× (issue 7) | 0.40× | PASS |
            <!-- /bench:ExecBenchmark -->

            Hand-written after the block.

            ## Fork

            <!-- bench:ForkBenchmark -->
            old fork figures

            | figure | goal | measured | result |
            |---|---|---|---|
            | 100 forks | ≤ 2000 ms (issue 10) | 2400 ms | **FAIL** |
            <!-- /bench:ForkBenchmark -->
            """;

    private static final String EXEC_REPORT = """
            | measurement | n | p50 ms | p99 ms |
            |---|---|---|---|
            | exec | 240 | 2.10 | 9.00 |

            | figure | goal | measured | result |
            |---|---|---|---|
            | exec / bare | ≤ 0.5× (issue 7) | 0.61× | **FAIL** |
            | agent RSS | ≤ 2048 KiB (issue 7) | 300 KiB | PASS |
            """;

    @Test
    void aReportReplacesOnlyTheBlockOfItsSectionAndTheGoalTableFollows() {
        String out = BenchDocs.update(DOC, Map.of("ExecBenchmark", EXEC_REPORT), false, null);

        assertTrue(out.contains("<!-- bench:ExecBenchmark -->\n" + EXEC_REPORT + "<!-- /bench:ExecBenchmark -->"), out);
        assertTrue(!out.contains("old exec figures"), out);
        assertTrue(out.contains("old fork figures"), "a benchmark not in this run keeps its section: " + out);
        assertTrue(out.contains("the last run of record"), "only a full run writes the run of record");
        assertEquals(DOC.replaceAll("(?s)<!-- bench:(\\w+) -->.*?<!-- /bench:\\1 -->", "BLOCK"),
                out.replaceAll("(?s)<!-- bench:(\\w+) -->.*?<!-- /bench:\\1 -->", "BLOCK"),
                "everything outside the markers is left as it was");
        assertTrue(out.contains("| [ExecBenchmark](#exec-round-trip) | exec / bare | ≤ 0.5× (issue 7) | 0.61× | **FAIL** |\n"
                + "| [ExecBenchmark](#exec-round-trip) | agent RSS | ≤ 2048 KiB (issue 7) | 300 KiB | PASS |\n"
                + "| [ForkBenchmark](#fork) | 100 forks | ≤ 2000 ms (issue 10) | 2400 ms | **FAIL** |\n"), out);
        assertTrue(out.contains("3 goals: 1 PASS, 2 FAIL, 0 not run."), out);
    }

    @Test
    void aSecondRunReplacesTheFirstRunsFigures() {
        String once = BenchDocs.update(DOC, Map.of("ExecBenchmark", EXEC_REPORT), false, null);
        String again = BenchDocs.update(once, Map.of("ExecBenchmark", EXEC_REPORT.replace("2.10", "1.90")), false, null);

        assertTrue(again.contains("| exec | 240 | 1.90 | 9.00 |"), again);
        assertTrue(!again.contains("2.10"), again);
        assertEquals(once.length(), again.length());
    }

    @Test
    void aFullRunWritesTheRunOfRecordAndMarksABenchmarkWithoutAReportNotRun() {
        String out = BenchDocs.update(DOC, Map.of("ExecBenchmark", EXEC_REPORT), true, "the new run of record\n");

        assertTrue(out.contains("<!-- bench:run -->\nthe new run of record\n<!-- /bench:run -->"), out);
        assertTrue(!out.contains("old fork figures") && !out.contains("2400 ms"), "no stale figure: " + out);
        assertTrue(out.contains("| 100 forks | ≤ 2000 ms (issue 10) | — | not run: this run wrote no report for it"), out);
        assertTrue(out.contains("3 goals: 1 PASS, 1 FAIL, 1 not run."), out);
    }

    @Test
    void aReportWithoutASectionIsRefusedWithWhatToAdd() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> BenchDocs.update(DOC, Map.of("NewBenchmark", EXEC_REPORT), false, null));
        assertTrue(e.getMessage().contains("<!-- bench:NewBenchmark -->"), e.getMessage());
    }

    @Test
    void theGoalsOfOneRunAreThoseOfItsReportsOnly() {
        String out = BenchDocs.update(DOC, Map.of("ExecBenchmark", EXEC_REPORT), false, null);
        String table = BenchDocs.goalTable(out, Set.of("ExecBenchmark"));

        assertTrue(table.contains("agent RSS") && !table.contains("100 forks"), table);
        assertTrue(table.contains("2 goals: 1 PASS, 1 FAIL, 0 not run."), table);
    }

    @Test
    void aCellMayHoldAnEscapedPipe() {
        String section = "| figure | goal | measured | result |\n|---|---|---|---|\n"
                + "| `find \\| xargs sha256sum` | ≤ 0.7× (issue 3) | 0.52× | PASS |\n";
        assertEquals(List.of(List.of("`find \\| xargs sha256sum`", "≤ 0.7× (issue 3)", "0.52×", "PASS")),
                BenchDocs.goalRows(section));
    }

    @Test
    void theReportsAreReadFromTheirFolderByName(@TempDir Path dir) throws Exception {
        Files.writeString(dir.resolve("ExecBenchmark.md"), EXEC_REPORT);
        Files.writeString(dir.resolve("notes.txt"), "not a report");

        assertEquals(Map.of("ExecBenchmark", EXEC_REPORT), BenchDocs.reports(dir));
        assertEquals(Map.of(), BenchDocs.reports(dir.resolve("absent")));
    }
}
