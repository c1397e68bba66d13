package io.vivarium.itests.osgi;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;

import com.fasterxml.jackson.databind.JsonNode;

import io.vivarium.api.SandboxService;
import io.vivarium.api.http.ApiSurface;
import io.vivarium.api.spi.RuntimeObserver;
import io.vivarium.api.spi.SandboxBackend;

import org.junit.Test;
import org.junit.runner.RunWith;
import org.ops4j.pax.exam.junit.PaxExam;
import org.osgi.framework.Bundle;
import org.osgi.framework.BundleException;
import org.osgi.framework.Constants;
import org.osgi.framework.FrameworkUtil;
import org.osgi.framework.ServiceReference;
import org.osgi.framework.startlevel.BundleStartLevel;
import org.osgi.framework.startlevel.FrameworkStartLevel;
import org.osgi.framework.namespace.PackageNamespace;
import org.osgi.framework.wiring.BundleRevision;
import org.osgi.framework.wiring.BundleWire;
import org.osgi.framework.wiring.BundleWiring;
import org.osgi.framework.wiring.FrameworkWiring;

/**
 * The shipped bundle set comes up whole: every bundle resolves and starts, the services the
 * daemon is made of are registered, and the HTTP edge answers.
 */
@RunWith(PaxExam.class)
public class BundleSetIT extends VivariumOsgiTestSupport {

    @Test
    public void theInstalledBundlesAreTheShippedSetPlusPaxExamsOwn() {
        Set<String> shipped = new LinkedHashSet<>(List.of(context().getProperty(VivariumOptions.SHIPPED_LOCATIONS).split(",")));
        Set<String> installed = new LinkedHashSet<>();
        List<String> unexpected = new ArrayList<>();
        Map<String, List<String>> bySymbolicName = new TreeMap<>();
        for (Bundle b : context().getBundles()) {
            installed.add(b.getLocation());
            bySymbolicName.computeIfAbsent(b.getSymbolicName(), k -> new ArrayList<>()).add(b.getLocation());
            boolean paxExam = b.getLocation().startsWith("link:classpath:") || b.equals(context().getBundle());
            if (b.getBundleId() != 0 && !paxExam && !shipped.contains(b.getLocation())) {
                unexpected.add(b.getSymbolicName() + " from " + b.getLocation());
            }
        }
        List<String> missing = shipped.stream().filter(l -> !installed.contains(l)).toList();
        assertTrue("shipped bundles that are not installed: " + missing + "\n" + report(), missing.isEmpty());
        assertTrue("installed bundles that no feature names: " + unexpected + "\n" + report(), unexpected.isEmpty());
        bySymbolicName.values().removeIf(locations -> locations.size() < 2);
        assertTrue("bundles installed twice (a stale jar in system/?): " + bySymbolicName, bySymbolicName.isEmpty());
    }

    @Test
    public void slf4jIsTheHostsWithItsProviderAndNoBundleExportsIt() throws Exception {
        Class<?> seen = context().getBundle().loadClass("org.slf4j.LoggerFactory");
        assertTrue("org.slf4j.LoggerFactory is loaded from the bundle " + FrameworkUtil.getBundle(seen)
                + ", expected the class path that starts the framework (HostLogging)", FrameworkUtil.getBundle(seen) == null);
        Object loggers = seen.getMethod("getILoggerFactory").invoke(null);
        assertEquals("slf4j found its provider, so the bundles' logs are not dropped", "org.slf4j.simple.SimpleLoggerFactory",
                loggers.getClass().getName());
        for (Bundle b : context().getBundles()) {
            BundleWiring wiring = b.adapt(BundleWiring.class);
            if (wiring == null) {
                continue;
            }
            for (BundleWire wire : wiring.getRequiredWires(PackageNamespace.PACKAGE_NAMESPACE)) {
                Object pkg = wire.getCapability().getAttributes().get(PackageNamespace.PACKAGE_NAMESPACE);
                if (String.valueOf(pkg).startsWith("org.slf4j")) {
                    assertEquals(b.getSymbolicName() + " imports " + pkg + " from " + wire.getProvider().getBundle().getSymbolicName()
                            + ", not from the system bundle", 0, wire.getProvider().getBundle().getBundleId());
                }
            }
        }
    }

    @Test
    public void everyBundleIsActiveAndEveryFragmentResolved() {
        List<Bundle> wrong = new ArrayList<>();
        for (Bundle b : context().getBundles()) {
            int expected = isFragment(b) ? Bundle.RESOLVED : Bundle.ACTIVE;
            if (b.getState() != expected) {
                wrong.add(b);
            }
        }
        if (!wrong.isEmpty()) {
            // Take the report first: diagnosing starts bundles, which changes states.
            String states = report();
            StringBuilder why = new StringBuilder();
            for (Bundle b : wrong) {
                why.append("\n  ").append(b.getSymbolicName()).append(' ').append(b.getVersion()).append(" is ")
                        .append(state(b.getState())).append(": ").append(diagnose(b));
            }
            fail(wrong.size() + " bundle(s) not " + "ACTIVE (fragments: RESOLVED):" + why + "\nAll bundles:\n" + states);
        }
    }

    @Test
    public void sandboxServiceIsRegisteredAndListsTheShippedBackend() {
        SandboxService service = awaitService(SandboxService.class, null);
        // DS binds the backend to core while its registration is delivered: listed once it is visible
        awaitService(SandboxBackend.class, "(" + SandboxBackend.NAME_PROPERTY + "=procbox)");
        List<String> listed = service.backends().stream().map(b -> b.name() + " from " + b.bundle()).toList();
        assertEquals(List.of("procbox from io.vivarium.backend-procbox"), listed);
    }

    @Test
    public void procboxBackendIsRegisteredWithItsName() {
        SandboxBackend backend = awaitService(SandboxBackend.class, "(" + SandboxBackend.NAME_PROPERTY + "=procbox)");
        assertEquals("procbox", backend.name());
    }

    @Test
    public void theV1AndMetricsSurfacesAreRegistered() throws Exception {
        awaitService(RuntimeObserver.class, null);
        Set<String> prefixes = new TreeSet<>();
        for (ServiceReference<ApiSurface> ref : context().getServiceReferences(ApiSurface.class, null)) {
            prefixes.add(context().getService(ref).prefix());
        }
        assertEquals(Set.of("/metrics", "/v1"), prefixes);
    }

    @Test
    public void metricsAnswersInThePrometheusTextFormat() {
        Http r = awaitGet("/metrics", true, "answers 200 with the request counter",
                h -> h.status() == 200 && h.body().contains("# TYPE vivarium_http_requests_total counter"));
        assertTrue("Content-Type of /metrics: " + r.contentType(), r.contentType().startsWith("text/plain; version=0.0.4"));
    }

    @Test
    public void httpBundleRegistersItsServlet() {
        Bundle http = bundle("io.vivarium.http");
        ServiceReference<?> ref = awaitService("(&(objectClass=jakarta.servlet.Servlet)"
                + "(osgi.http.whiteboard.servlet.pattern=*))");
        List<ServiceReference<?>> ofHttp = new ArrayList<>();
        ServiceReference<?>[] registered = http.getRegisteredServices();
        for (ServiceReference<?> r : registered == null ? new ServiceReference<?>[0] : registered) {
            if (Arrays.asList((String[]) r.getProperty(Constants.OBJECTCLASS)).contains("jakarta.servlet.Servlet")) {
                ofHttp.add(r);
            }
        }
        assertTrue("io.vivarium.http registers no jakarta.servlet.Servlet; a whiteboard servlet is registered by "
                + ref.getBundle().getSymbolicName() + " " + properties(ref), !ofHttp.isEmpty());
    }

    @Test
    public void healthzAnswersWithoutCredentials() {
        Http r = awaitGet("/healthz", false, "answers 200", h -> h.status() == 200);
        assertEquals("{\"ok\":true}", r.json().toString());
        assertTrue("Content-Type of /healthz: " + r.contentType(), r.contentType().startsWith("application/json"));
    }

    @Test
    public void backendsListsProcboxForAnAdmin() {
        Http r = awaitGet("/v1/backends", true, "answers 200 listing procbox",
                h -> h.status() == 200 && backendNames(h).contains("procbox"));
        JsonNode procbox = null;
        for (JsonNode b : r.json()) {
            if (b.path("name").asText().equals("procbox")) {
                procbox = b;
            }
        }
        assertEquals(r.body(), "io.vivarium.backend-procbox", procbox.path("bundle").asText());
        assertTrue(r.body(), procbox.has("available") && procbox.has("capabilities"));
    }

    @Test
    public void backendsNeedsAToken() {
        Http r = awaitGet("/v1/backends", false, "answers 401 without a token", h -> h.status() == 401);
        assertTrue("401 body: " + r.body(), r.json().path("error").isTextual());
    }

    // ------------------------------------------------------------------ diagnostics

    private static boolean isFragment(Bundle b) {
        BundleRevision rev = b.adapt(BundleRevision.class);
        return rev != null && (rev.getTypes() & BundleRevision.TYPE_FRAGMENT) != 0;
    }

    /** One line per bundle: id, name, version, state, start level, location. */
    private String report() {
        int frameworkLevel = context().getBundle(0).adapt(FrameworkStartLevel.class).getStartLevel();
        StringBuilder s = new StringBuilder("  (framework start level " + frameworkLevel + ")");
        for (Bundle b : context().getBundles()) {
            BundleStartLevel sl = b.adapt(BundleStartLevel.class);
            s.append(String.format("%n  %3d %-10s level %d  %s %s%s  %s", b.getBundleId(), state(b.getState()),
                    sl == null ? 0 : sl.getStartLevel(), b.getSymbolicName(), b.getVersion(),
                    isFragment(b) ? " (fragment)" : "", b.getLocation()));
        }
        return s.toString();
    }

    /** Why a bundle is not where it should be: the framework's own words. */
    private String diagnose(Bundle b) {
        if (b.getState() == Bundle.INSTALLED) {
            FrameworkWiring wiring = context().getBundle(0).adapt(FrameworkWiring.class);
            if (!wiring.resolveBundles(List.of(b)) && isFragment(b)) {
                return "fragment does not resolve (no matching host, or a missing requirement)";
            }
        }
        if (isFragment(b)) {
            return "fragment in state " + state(b.getState());
        }
        BundleStartLevel sl = b.adapt(BundleStartLevel.class);
        int frameworkLevel = context().getBundle(0).adapt(FrameworkStartLevel.class).getStartLevel();
        if (sl != null && sl.getStartLevel() > frameworkLevel) {
            return "its start level " + sl.getStartLevel() + " is above the framework's " + frameworkLevel;
        }
        if (sl != null && !sl.isPersistentlyStarted()) {
            return "it was never asked to start";
        }
        try {
            b.start();
            return "started on a second attempt (it was not started at boot)";
        } catch (BundleException | RuntimeException e) {
            StringBuilder msg = new StringBuilder(e.toString());
            for (Throwable c = e.getCause(); c != null; c = c.getCause()) {
                msg.append("\n      caused by ").append(c);
            }
            return msg.toString();
        }
    }

    private static String properties(ServiceReference<?> ref) {
        StringBuilder s = new StringBuilder("{");
        for (String k : ref.getPropertyKeys()) {
            Object v = ref.getProperty(k);
            s.append(k).append('=').append(v instanceof Object[] a ? Arrays.toString(a) : v).append(", ");
        }
        return s.append('}').toString();
    }

    private static String state(int state) {
        return switch (state) {
            case Bundle.UNINSTALLED -> "UNINSTALLED";
            case Bundle.INSTALLED -> "INSTALLED";
            case Bundle.RESOLVED -> "RESOLVED";
            case Bundle.STARTING -> "STARTING";
            case Bundle.STOPPING -> "STOPPING";
            case Bundle.ACTIVE -> "ACTIVE";
            default -> "state " + state;
        };
    }
}
