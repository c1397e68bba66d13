package io.vivarium.itests.osgi;

import static org.junit.Assert.assertNotNull;
import static org.junit.Assert.fail;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;
import java.util.function.Supplier;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import org.junit.Rule;
import org.junit.rules.Timeout;
import org.ops4j.pax.exam.Configuration;
import org.ops4j.pax.exam.Option;
import org.ops4j.pax.exam.spi.reactors.ExamReactorStrategy;
import org.ops4j.pax.exam.spi.reactors.PerClass;
import org.osgi.framework.Bundle;
import org.osgi.framework.BundleContext;
import org.osgi.framework.FrameworkUtil;
import org.osgi.framework.InvalidSyntaxException;
import org.osgi.framework.ServiceReference;
import org.osgi.util.tracker.ServiceTracker;

/**
 * Base of the in-container tests: one Felix boot per test class with the shipped bundle set (see
 * {@link VivariumOptions}), and helpers that run inside the framework: bounded waits for services
 * and conditions, bundle lookup, and HTTP calls to the daemon's port.
 *
 * <p>Subclasses carry {@code @RunWith(PaxExam.class)}. Test methods run inside the container; only
 * {@link #config()} runs in the test JVM.
 */
@ExamReactorStrategy(PerClass.class)
public abstract class VivariumOsgiTestSupport {

    /** Upper bound of every wait in these tests; a healthy framework needs well under a second. */
    protected static final Duration TIMEOUT = Duration.ofSeconds(30);

    private static final ObjectMapper JSON = new ObjectMapper();

    /**
     * Every test method's bound (failsafe's {@code vivarium.test.timeout.seconds}), as JUnit 5's
     * default timeout bounds the other tests: past it the method fails with its thread's stack.
     */
    @Rule
    public final Timeout timeout = Timeout.builder()
            .withTimeout(Long.getLong("vivarium.test.timeout.seconds", 300), TimeUnit.SECONDS)
            .withLookingForStuckThread(true)
            .build();

    @Configuration
    public Option[] config() {
        return VivariumOptions.forTestClass(getClass());
    }

    // ------------------------------------------------------------------ framework

    protected BundleContext context() {
        Bundle probe = FrameworkUtil.getBundle(getClass());
        assertNotNull("test class is not loaded from a bundle: is this running inside the container?", probe);
        return probe.getBundleContext();
    }

    protected Bundle bundle(String symbolicName) {
        for (Bundle b : context().getBundles()) {
            if (symbolicName.equals(b.getSymbolicName())) {
                return b;
            }
        }
        fail("no bundle " + symbolicName + " is installed; installed: " + installedSymbolicNames());
        return null;
    }

    private List<String> installedSymbolicNames() {
        List<String> names = new ArrayList<>();
        for (Bundle b : context().getBundles()) {
            names.add(b.getSymbolicName());
        }
        return names;
    }

    /** Waits for a service matching an LDAP filter (no class loading needed); fails after {@link #TIMEOUT}. */
    protected ServiceReference<?> awaitService(String filter) {
        ServiceTracker<?, ?> tracker;
        try {
            tracker = new ServiceTracker<>(context(), context().createFilter(filter), null);
        } catch (InvalidSyntaxException e) {
            throw new IllegalArgumentException(filter, e);
        }
        tracker.open(true);
        try {
            if (tracker.waitForService(TIMEOUT.toMillis()) == null) {
                fail("no service matching " + filter + " within " + TIMEOUT.toSeconds() + " s");
            }
            return tracker.getServiceReference();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError("interrupted while waiting for " + filter, e);
        } finally {
            tracker.close();
        }
    }

    /** Waits for a service of a type, optionally narrowed by a filter, and returns it. */
    protected <T> T awaitService(Class<T> type, String filter) {
        String f = "(objectClass=" + type.getName() + ")";
        if (filter != null) {
            f = "(&" + f + filter + ")";
        }
        ServiceReference<?> ref = awaitService(f);
        Object service = context().getService(ref);
        assertNotNull("service " + ref + " went away before it could be used", service);
        return type.cast(service);
    }

    /**
     * Polls {@code condition} until it is true or {@link #TIMEOUT} passes, then fails with
     * {@code what} and the last value of {@code state} (which says what was seen instead).
     */
    protected static void await(String what, Supplier<Boolean> condition, Supplier<?> state) {
        long deadline = System.nanoTime() + TIMEOUT.toNanos();
        while (!condition.get()) {
            if (System.nanoTime() - deadline > 0) {
                fail("timed out after " + TIMEOUT.toSeconds() + " s waiting until " + what + "; last seen: " + state.get());
            }
            pause();
        }
    }

    private static void pause() {
        try {
            Thread.sleep(50);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError("interrupted", e);
        }
    }

    // ------------------------------------------------------------------ HTTP

    /** One HTTP exchange; {@code status} is -1 when the connection failed ({@code body} then says why). */
    protected record Http(int status, String body, String contentType) {
        JsonNode json() {
            try {
                return JSON.readTree(body);
            } catch (IOException e) {
                throw new AssertionError("response body is not JSON: " + body, e);
            }
        }

        @Override
        public String toString() {
            return status < 0 ? "no response (" + body + ")" : "HTTP " + status + " " + body;
        }
    }

    protected String baseUri() {
        return "http://127.0.0.1:" + context().getProperty(VivariumOptions.HTTP_PORT);
    }

    protected String adminToken() {
        return context().getProperty(VivariumOptions.ADMIN_TOKEN);
    }

    /** GET {@code path}, with the admin bearer token if {@code authenticated}. */
    protected Http get(String path, boolean authenticated) {
        HttpRequest.Builder req = HttpRequest.newBuilder(URI.create(baseUri() + path)).timeout(Duration.ofSeconds(10)).GET();
        if (authenticated) {
            req.header("Authorization", "Bearer " + adminToken());
        }
        // A client per call: it is closed at once, so no selector thread outlives the framework.
        try (HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build()) {
            HttpResponse<String> resp = http.send(req.build(), HttpResponse.BodyHandlers.ofString());
            return new Http(resp.statusCode(), resp.body(), resp.headers().firstValue("Content-Type").orElse(""));
        } catch (IOException e) {
            return new Http(-1, e.toString(), "");
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError("interrupted", e);
        }
    }

    /** Repeats GET {@code path} until the response satisfies {@code expected}, and returns that response. */
    protected Http awaitGet(String path, boolean authenticated, String what, Predicate<Http> expected) {
        Http[] last = new Http[1];
        await("GET " + path + " " + what, () -> expected.test(last[0] = get(path, authenticated)), () -> last[0]);
        return last[0];
    }

    /** Names in a {@code GET /v1/backends} body, or an empty list if it is not a JSON array. */
    protected static List<String> backendNames(Http response) {
        List<String> names = new ArrayList<>();
        if (response.status() == 200) {
            JsonNode list = response.json();
            if (list.isArray()) {
                list.forEach(b -> names.add(b.path("name").asText()));
            }
        }
        return names;
    }
}
