package io.vivarium.itests.bench;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.time.LocalDateTime;
import java.time.ZoneOffset;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * What one benchmark reports: its tables and lines, then its goals, each with what was measured
 * and PASS or FAIL (or why it was not run), then when it ran and the load average around it.
 * {@link #write()} prints it and writes it to {@code target/bench/NAME.md}, from where
 * {@code ./vivarium bench} puts it into its section of docs/benchmarks.md ({@link BenchDocs}).
 * JUnit 5 benchmarks get theirs from {@link Bench}; the in-container tests make their own.
 */
public final class BenchReport {
    private final String name;
    private final List<String> body = new ArrayList<>();
    private final Map<Goal, String[]> goals = new LinkedHashMap<>();
    private final Instant started;
    private final String loadBefore;

    /** A report named {@code name} (its section's marker in docs/benchmarks.md) with the goals it will check. */
    public BenchReport(String name, List<Goal> declared) {
        this(name, declared, Instant.now(), loadAverage());
    }

    /**
     * A report made once the benchmark has run, which started at {@code started} under the load
     * average {@code loadBefore} (null if unknown): for a test that runs none of this class's code
     * before it has measured (LeakIT).
     */
    public BenchReport(String name, List<Goal> declared, Instant started, String loadBefore) {
        this.name = name;
        this.started = started;
        this.loadBefore = loadBefore;
        for (Goal g : declared) {
            goals.put(g, new String[] {"—", "not run: not measured by this run"});
        }
    }

    public String name() {
        return name;
    }

    /** Adds markdown (a line, a paragraph, a {@link Table}); an empty line goes between two additions. */
    public BenchReport add(Object markdown) {
        body.add(markdown.toString().strip());
        return this;
    }

    /**
     * Checks a declared goal against what was measured and records it; returns the verdict as a
     * report's line would quote it beside the figure: {@code 0.92× (goal ≤ 0.5×: FAIL)}.
     */
    public String check(Goal goal, double measured) {
        return check(goal, goal.met(measured), goal.format(measured));
    }

    /** As {@link #check(Goal, double)}, with the measured value described by {@code measured} ("no (still reachable)"). */
    public String check(Goal goal, boolean met, String measured) {
        declared(goal);
        String verdict = met ? "PASS" : "FAIL";
        goals.put(goal, new String[] {measured, met ? verdict : "**" + verdict + "**"});
        return measured + " (goal " + goal.text() + ": " + verdict + ")";
    }

    /** A declared goal this run could not measure, and why. */
    public void notRun(Goal goal, String reason) {
        declared(goal);
        goals.put(goal, new String[] {"—", "not run: " + reason});
    }

    /** The benchmark did not run ({@code reason}: what this host lacks): nothing but that, and every goal not run. */
    public void notRun(String reason) {
        body.clear();
        body.add("Not run: " + reason + ".");
        goals.keySet().forEach(g -> notRun(g, reason));
    }

    /** The benchmark failed: what it measured so far stands, the failure is said, the goals it did not reach are not run. */
    public void failed(Throwable cause) {
        String why = "the run failed: " + oneLine(cause);
        body.add("**" + why + "**");
        goals.forEach((g, result) -> {
            if (result[1].startsWith("not run")) {
                notRun(g, why);
            }
        });
    }

    private void declared(Goal goal) {
        if (!goals.containsKey(goal)) {
            throw new IllegalArgumentException(name + " checks a goal it did not declare: " + goal);
        }
    }

    /** Whether every declared goal was checked and met. */
    public boolean allMet() {
        return goals.values().stream().allMatch(r -> r[1].equals("PASS"));
    }

    /** The report as markdown: the body, the goal table (if any goals), the run's time and load. */
    public String render() {
        List<String> parts = new ArrayList<>(body);
        if (goals.isEmpty()) {
            parts.add("No goal is set for these figures: they are reported.");
        } else {
            Table table = new Table(BenchDocs.GOAL_COLUMNS);
            goals.forEach((g, r) -> table.row(g.figure(), g.text(), r[0], r[1]));
            parts.add(table.toString());
        }
        Instant now = Instant.now();
        parts.add(String.format("Run: %s %s–%s UTC; load average %s.", utc(started).toLocalDate(), utc(started).toLocalTime(),
                utc(now).toLocalTime(), loadBefore == null ? loadAverage() + " at the end"
                        : loadBefore + " at the start, " + loadAverage() + " at the end"));
        return String.join("\n\n", parts) + "\n";
    }

    /** The body of a benchmark without {@link Bench}: a JUnit 4 test in the OSGi container. */
    public interface Body {
        void run() throws Exception;
    }

    /**
     * Runs {@code body} and writes this report however it ends, as {@link Bench} does for a JUnit 5
     * benchmark: as measured, as not run when an assumption skipped it (JUnit 4's or 5's), with the
     * failure said when it failed; then ends as the body did.
     */
    public void writeAfter(Body body) throws Exception {
        try {
            body.run();
        } catch (Exception | Error e) {
            endedBy(e);
            throw e;
        }
        write();
    }

    /** Writes this report for a benchmark that {@code ended} by: not run if an assumption (JUnit 4's or 5's), else failed. */
    public void endedBy(Throwable ended) {
        String type = ended.getClass().getSimpleName();
        if (type.equals("AssumptionViolatedException") || type.equals("TestAbortedException")) {
            notRun(String.valueOf(ended.getMessage()));
        } else {
            failed(ended);
        }
        write();
    }

    /** Prints the report and writes it to {@code target/bench/NAME.md} (in the itests module, also from inside a container). */
    public Path write() {
        String text = render();
        System.out.println("[" + name + "]\n" + text);
        Path file = directory().resolve(name + ".md");
        try {
            Files.createDirectories(file.getParent());
            Files.writeString(file, text, StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return file;
    }

    /** Where reports go: {@code target/bench} of the itests module (failsafe passes its target directory). */
    public static Path directory() {
        return Path.of(System.getProperty("vivarium.itests.target", "target"), "bench");
    }

    /** The 1-minute load average, as /proc/loadavg gives it. */
    public static String loadAverage() {
        try {
            return Files.readString(Path.of("/proc/loadavg")).split(" ")[0];
        } catch (IOException e) {
            return "?";
        }
    }

    /** To the minute, in UTC. */
    private static LocalDateTime utc(Instant instant) {
        return LocalDateTime.ofInstant(instant, ZoneOffset.UTC).truncatedTo(ChronoUnit.MINUTES);
    }

    private static String oneLine(Throwable cause) {
        String message = cause.getMessage() == null ? cause.getClass().getSimpleName() : cause.getMessage();
        String first = message.strip().lines().findFirst().orElse("");
        return first.length() > 300 ? first.substring(0, 300) + "…" : first;
    }
}
