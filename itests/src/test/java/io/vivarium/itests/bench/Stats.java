package io.vivarium.itests.bench;

import java.util.Arrays;
import java.util.List;

/** The statistics every benchmark reports: nearest-rank percentiles of samples, in the samples' unit. */
public final class Stats {
    private Stats() {
    }

    /** The {@code p}th percentile (nearest rank: p50 of 4 values is the 2nd smallest, p100 the largest); NaN if empty. */
    public static double pct(List<? extends Number> values, int p) {
        if (values.isEmpty()) {
            return Double.NaN;
        }
        double[] v = values.stream().mapToDouble(Number::doubleValue).toArray();
        Arrays.sort(v);
        return v[Math.max(0, Math.min(v.length - 1, (int) Math.ceil(p / 100.0 * v.length) - 1))];
    }

    public static double p50(List<? extends Number> values) {
        return pct(values, 50);
    }

    public static double max(List<? extends Number> values) {
        return pct(values, 100);
    }

    public static double min(List<? extends Number> values) {
        return values.stream().mapToDouble(Number::doubleValue).min().orElse(Double.NaN);
    }

    /** Milliseconds since {@code startNanos} ({@link System#nanoTime()}). */
    public static double millisSince(long startNanos) {
        return (System.nanoTime() - startNanos) / 1e6;
    }
}
