package io.vivarium.common.backend;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import java.lang.reflect.Array;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.lang.reflect.Proxy;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.stream.Stream;

import io.vivarium.api.spi.Images;
import io.vivarium.api.spi.SandboxBackend;

import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;

/**
 * Every method of {@link SandboxBackend} and {@link Images}, default ones included, reaches the
 * delegate as itself: a method the forwarding classes do not override runs the interface's default
 * on the component instead, which calls something else on the delegate or nothing at all.
 */
class DelegatingBackendTest {

    @TestFactory
    Stream<DynamicTest> forwardsEverySandboxBackendMethod() {
        Recorder backend = new Recorder();
        DelegatingBackend component = new DelegatingBackend() {
            @Override
            protected SandboxBackend backend() {
                return backend.proxy(SandboxBackend.class);
            }
        };
        return methodsOf(SandboxBackend.class).map(m -> DynamicTest.dynamicTest(signature(m),
                () -> assertForwarded(component, m, backend)));
    }

    @TestFactory
    Stream<DynamicTest> forwardsEveryMethodToBackendOrImages() {
        Recorder backend = new Recorder();
        Recorder images = new Recorder();
        DelegatingImagesBackend component = new DelegatingImagesBackend() {
            @Override
            protected SandboxBackend backend() {
                return backend.proxy(SandboxBackend.class);
            }

            @Override
            protected Images images() {
                return images.proxy(Images.class);
            }
        };
        return Stream.concat(
                methodsOf(SandboxBackend.class).map(m -> DynamicTest.dynamicTest("backend " + signature(m),
                        () -> assertForwarded(component, m, backend))),
                methodsOf(Images.class).map(m -> DynamicTest.dynamicTest("images " + signature(m),
                        () -> assertForwarded(component, m, images))));
    }

    /** Core tells a backend with images by {@code instanceof}: one without must not look like one. */
    @Test
    void aBackendWithoutImagesIsNoImages() {
        assertFalse(Images.class.isAssignableFrom(DelegatingBackend.class));
    }

    private static void assertForwarded(Object component, Method method, Recorder delegate) throws Exception {
        delegate.calls.clear();
        try {
            method.invoke(component, nullArguments(method));
        } catch (InvocationTargetException e) {
            // a default run on the component may fail on the null arguments; what it called is what counts
        }
        assertEquals(List.of(signature(method)), delegate.calls, "calls reaching the delegate");
    }

    private static Stream<Method> methodsOf(Class<?> type) {
        return Arrays.stream(type.getMethods()).filter(m -> !Modifier.isStatic(m.getModifiers()));
    }

    private static Object[] nullArguments(Method method) {
        return Arrays.stream(method.getParameterTypes()).map(DelegatingBackendTest::zero).toArray();
    }

    private static Object zero(Class<?> type) {
        return !type.isPrimitive() || type == void.class ? null : Array.get(Array.newInstance(type, 1), 0);
    }

    private static String signature(Method m) {
        return m.getDeclaringClass().getSimpleName() + "." + m.getName()
                + Arrays.stream(m.getParameterTypes()).map(Class::getSimpleName).toList();
    }

    /** A delegate that records each call and answers with nothing. */
    private static final class Recorder {
        final List<String> calls = new ArrayList<>();

        <T> T proxy(Class<T> type) {
            return type.cast(Proxy.newProxyInstance(type.getClassLoader(), new Class<?>[] {type}, (proxy, method, args) -> {
                calls.add(signature(method));
                return zero(method.getReturnType());
            }));
        }
    }
}
