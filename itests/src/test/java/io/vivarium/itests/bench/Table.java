package io.vivarium.itests.bench;

import java.util.ArrayList;
import java.util.List;

/** A markdown table of a report; numbers are printed by {@link Goal#number}. */
public final class Table {
    private final List<String> lines = new ArrayList<>();
    private final int columns;

    public Table(String... header) {
        columns = header.length;
        lines.add(line(List.of(header)));
        lines.add("|" + "---|".repeat(columns));
    }

    /** The table most benchmarks print: a measurement, its sample count, p50 and p99 in milliseconds. */
    public static Table latencies() {
        return new Table("measurement", "n", "p50 ms", "p99 ms");
    }

    /** A row of {@link #latencies()}: what was timed and its samples in milliseconds. */
    public Table latency(String what, List<Double> millis) {
        return row(what, millis.size(), Stats.p50(millis), Stats.pct(millis, 99));
    }

    /** A row; a {@code double} cell is printed by {@link Goal#number}, anything else as its string. */
    public Table row(Object... cells) {
        if (cells.length != columns) {
            throw new IllegalArgumentException("a row of " + columns + " cells expected, got " + cells.length);
        }
        List<String> text = new ArrayList<>();
        for (Object cell : cells) {
            text.add(cell instanceof Double d ? Goal.number(d, false) : String.valueOf(cell));
        }
        lines.add(line(text));
        return this;
    }

    private static String line(List<String> cells) {
        return "| " + String.join(" | ", cells.stream().map(c -> c.replace("|", "\\|")).toList()) + " |";
    }

    @Override
    public String toString() {
        return String.join("\n", lines);
    }
}
