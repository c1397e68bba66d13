package io.vivarium.itests.bench;

import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.extension.ParameterContext;
import org.junit.jupiter.api.extension.ParameterResolver;
import org.junit.jupiter.api.extension.TestWatcher;

/**
 * Gives a benchmark (a JUnit 5 test class annotated {@code @ExtendWith(Bench.class)}) its
 * {@link BenchReport} as a parameter of its test method, named after the class and declaring the
 * class's {@code static final} {@link Goal} fields, and writes the report however the test ends:
 * as measured when it passes, with the failure said when it fails, as "not run: REASON" when an
 * assumption skipped it. So a section of docs/benchmarks.md is never left with an earlier run's
 * figures.
 */
public final class Bench implements ParameterResolver, TestWatcher {
    private static final ExtensionContext.Namespace NAMESPACE = ExtensionContext.Namespace.create(Bench.class);

    @Override
    public boolean supportsParameter(ParameterContext parameter, ExtensionContext context) {
        return parameter.getParameter().getType() == BenchReport.class;
    }

    @Override
    public Object resolveParameter(ParameterContext parameter, ExtensionContext context) {
        return report(context);
    }

    @Override
    public void testSuccessful(ExtensionContext context) {
        report(context).write();
    }

    @Override
    public void testAborted(ExtensionContext context, Throwable cause) {
        BenchReport report = report(context);
        report.notRun(cause.getMessage() == null ? "skipped" : cause.getMessage().replaceFirst("^Assumption failed: ", ""));
        report.write();
    }

    @Override
    public void testFailed(ExtensionContext context, Throwable cause) {
        BenchReport report = report(context);
        report.failed(cause);
        report.write();
    }

    @Override
    public void testDisabled(ExtensionContext context, Optional<String> reason) {
        // a disabled benchmark leaves its section as it was: nothing ran
    }

    private static BenchReport report(ExtensionContext context) {
        Class<?> benchmark = context.getRequiredTestClass();
        return context.getStore(NAMESPACE).getOrComputeIfAbsent("report",
                key -> new BenchReport(benchmark.getSimpleName(), declaredGoals(benchmark)), BenchReport.class);
    }

    /** The class's static Goal fields, in the order they are declared. */
    static List<Goal> declaredGoals(Class<?> benchmark) {
        List<Goal> goals = new ArrayList<>();
        for (Field f : benchmark.getDeclaredFields()) {
            if (f.getType() == Goal.class && Modifier.isStatic(f.getModifiers())) {
                try {
                    f.setAccessible(true);
                    goals.add((Goal) f.get(null));
                } catch (IllegalAccessException e) {
                    throw new IllegalStateException("cannot read goal " + f, e);
                }
            }
        }
        return goals;
    }
}
