package io.vivarium.itests.bench;

import java.math.BigDecimal;
import java.util.Locale;

/**
 * The goal of one figure, as the issue that asked for the figure states it: a bound on a value
 * ({@code ≤ 0.5×}, {@code < 100 ms}, {@code ≥ 20×}, {@code = 0}) or a fact that must hold. A
 * benchmark declares its goals as {@code static final} fields, so that a run that cannot measure
 * them still lists them, as not run ({@link Bench}), and checks each against what it measured
 * ({@link BenchReport#check}).
 *
 * @param figure what is measured, as the report's goal table names it
 * @param unit printed after the value: {@code ×}, {@code ms}, {@code MiB}, {@code /s}...
 * @param issue the issue that set the goal
 */
public record Goal(String figure, Bound bound, double target, String unit, int issue) {

    /** How a measured value must compare with the target; {@link #HOLDS} ignores it. */
    public enum Bound {
        AT_MOST("≤"), BELOW("<"), AT_LEAST("≥"), EXACTLY("="), HOLDS("");

        private final String sign;

        Bound(String sign) {
            this.sign = sign;
        }
    }

    public static Goal atMost(String figure, double target, String unit, int issue) {
        return new Goal(figure, Bound.AT_MOST, target, unit, issue);
    }

    public static Goal below(String figure, double target, String unit, int issue) {
        return new Goal(figure, Bound.BELOW, target, unit, issue);
    }

    public static Goal atLeast(String figure, double target, String unit, int issue) {
        return new Goal(figure, Bound.AT_LEAST, target, unit, issue);
    }

    public static Goal exactly(String figure, double target, String unit, int issue) {
        return new Goal(figure, Bound.EXACTLY, target, unit, issue);
    }

    /** A fact that must hold ("yes"), such as "the old class loader was collected". */
    public static Goal holds(String figure, int issue) {
        return new Goal(figure, Bound.HOLDS, 1, "", issue);
    }

    /** Whether {@code value} meets this goal; NaN (nothing measured) never does. */
    public boolean met(double value) {
        if (Double.isNaN(value)) {
            return false;
        }
        return switch (bound) {
            case AT_MOST -> value <= target;
            case BELOW -> value < target;
            case AT_LEAST -> value >= target;
            case EXACTLY -> value == target;
            case HOLDS -> value != 0;
        };
    }

    /** The goal as the tables print it: {@code ≤ 0.5× (issue 22)}. */
    public String text() {
        String what = bound == Bound.HOLDS ? "yes"
                : bound.sign + " " + withUnit(BigDecimal.valueOf(target).stripTrailingZeros().toPlainString());
        return what + " (issue " + issue + ")";
    }

    /** {@code value} with this goal's unit, to as many digits as its size calls for. */
    public String format(double value) {
        return withUnit(number(value, unit.equals("×")));
    }

    /** A number for a report: whole numbers as such; else 2 decimals below 10 (always for ratios), 1 below 100, none above. */
    public static String number(double value, boolean ratio) {
        if (Double.isNaN(value)) {
            return "—";
        }
        if (!ratio && value == Math.rint(value) && Math.abs(value) < 1e15) {
            return Long.toString((long) value);
        }
        double size = Math.abs(value);
        String pattern = ratio || size < 10 ? "%.2f" : size < 100 ? "%.1f" : "%.0f";
        return String.format(Locale.ROOT, pattern, value);
    }

    private String withUnit(String number) {
        if (unit.isEmpty()) {
            return number;
        }
        boolean attached = unit.equals("×") || unit.equals("%") || unit.startsWith("/");
        return number + (attached ? "" : " ") + unit;
    }
}
