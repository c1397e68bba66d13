package io.vivarium.itests.osgi;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertNotEquals;
import static org.junit.Assert.assertNotNull;
import static org.junit.Assert.assertTrue;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import io.vivarium.api.BackendInfo;
import io.vivarium.api.SandboxService;
import io.vivarium.api.http.ApiSurface;
import io.vivarium.api.spi.FingerprintMode;
import io.vivarium.api.spi.SandboxBackend;

import org.junit.Test;
import org.junit.runner.RunWith;
import org.ops4j.pax.exam.junit.PaxExam;
import org.osgi.framework.Bundle;
import org.osgi.framework.BundleEvent;
import org.osgi.framework.Constants;
import org.osgi.framework.InvalidSyntaxException;
import org.osgi.framework.ServiceEvent;
import org.osgi.framework.ServiceListener;
import org.osgi.framework.ServiceReference;
import org.osgi.framework.SynchronousBundleListener;
import org.osgi.framework.wiring.BundleWiring;

/**
 * Updating the procbox bundle and refreshing it alone touches nothing else: the API, core, HTTP
 * edge, API surface and fingerprint bundles keep their ids, states and wirings, their services keep
 * their ids, and no other bundle sees a bundle event. Only procbox's own SandboxBackend service is
 * replaced; the procbox bundle keeps its id (an update is not a reinstall).
 */
@RunWith(PaxExam.class)
public class NoRefreshStormIT extends VivariumOsgiTestSupport {

    private static final String NEW_VERSION = "0.1.0.upgrade1";

    @Test
    public void updatingProcboxRestartsOnlyProcbox() throws Exception {
        SandboxService sandboxes = awaitService(SandboxService.class, null);
        awaitService(ApiSurface.class, null);
        awaitService(FingerprintMode.class, "(vivarium.fingerprint=sha256)");
        awaitService(FingerprintMode.class, "(vivarium.fingerprint=stat)");
        awaitService("(&(objectClass=jakarta.servlet.Servlet)(osgi.http.whiteboard.servlet.name=vivarium))");
        Bundle procbox = bundle(ProcboxBuilds.PROCBOX_BUNDLE);
        await("core lists procbox", () -> procboxVersion(sandboxes) != null, sandboxes::backends);

        List<Bundle> watched = new ArrayList<>(List.of(bundle("io.vivarium.api"), bundle("io.vivarium.core"),
                bundle("io.vivarium.http"), bundle("io.vivarium.api-v1")));
        for (Bundle b : context().getBundles()) {
            if (b.getSymbolicName() != null && b.getSymbolicName().startsWith("io.vivarium.fingerprint-")) {
                watched.add(b);
            }
        }
        assertTrue("expected the fingerprint-sha256 and fingerprint-stat bundles, watching " + names(watched),
                watched.size() >= 6);

        Map<String, Long> servicesBefore = namedServices();
        Map<String, String> bundlesBefore = bundleStates(watched);
        Map<String, String> everyOtherBundleBefore = everyBundleBut(procbox);
        Map<String, BundleWiring> wiringsBefore = wirings(watched);
        long procboxId = procbox.getBundleId();
        long backendServiceBefore = procboxServiceId();

        List<String> foreignEvents = Collections.synchronizedList(new ArrayList<>());
        SynchronousBundleListener bundleEvents = e -> {
            if (e.getBundle().getBundleId() != procboxId) {
                foreignEvents.add("bundle " + e.getBundle().getSymbolicName() + " " + bundleEventName(e.getType()));
            }
        };
        ServiceListener serviceEvents = e -> {
            ServiceReference<?> ref = e.getServiceReference();
            if (ref.getBundle() != null && ref.getBundle().getBundleId() != procboxId && e.getType() != ServiceEvent.MODIFIED) {
                foreignEvents.add((e.getType() == ServiceEvent.REGISTERED ? "registered " : "unregistering ")
                        + String.join(",", (String[]) ref.getProperty(Constants.OBJECTCLASS)) + " of "
                        + ref.getBundle().getSymbolicName() + " (service.id " + ref.getProperty(Constants.SERVICE_ID) + ")");
            }
        };
        context().addBundleListener(bundleEvents);
        context().addServiceListener(serviceEvents);
        ProcboxBuilds.Upgrade upgrade;
        try {
            upgrade = ProcboxBuilds.updateAndRefresh(context(), procbox,
                    ProcboxBuilds.withVersion(ProcboxBuilds.shippedJar(procbox), NEW_VERSION), TIMEOUT);
            await("core lists procbox " + NEW_VERSION, () -> NEW_VERSION.equals(procboxVersion(sandboxes)),
                    sandboxes::backends);
        } finally {
            context().removeServiceListener(serviceEvents);
            context().removeBundleListener(bundleEvents);
        }
        System.out.printf("[NoRefreshStormIT] update() %.1f ms, refresh %.1f ms; events outside procbox: %s%n",
                upgrade.updateMillis(), upgrade.refreshMillis(), foreignEvents);

        assertEquals("the procbox bundle id (an update keeps it)", procboxId, procbox.getBundleId());
        assertEquals(Bundle.ACTIVE, procbox.getState());
        assertEquals(NEW_VERSION, procbox.getVersion().toString());
        assertNotEquals("procbox's SandboxBackend service should have been re-registered", backendServiceBefore,
                procboxServiceId());
        synchronized (foreignEvents) {
            assertTrue("bundle or service events of bundles other than procbox during its update and refresh: "
                    + foreignEvents, foreignEvents.isEmpty());
        }
        assertEquals("ids and states of the API, core, HTTP, API surface and fingerprint bundles", bundlesBefore,
                bundleStates(watched));
        Map<String, BundleWiring> wiringsAfter = wirings(watched);
        List<String> rewired = wiringsBefore.keySet().stream()
                .filter(name -> wiringsBefore.get(name) != wiringsAfter.get(name)).toList();
        assertTrue("bundles with a new wiring (they were refreshed): " + rewired, rewired.isEmpty());
        assertEquals("service ids of SandboxService, the HTTP servlet, the API surfaces and the fingerprint modes",
                servicesBefore, namedServices());
        assertEquals("every other bundle's id, state and last-modified time", everyOtherBundleBefore,
                everyBundleBut(procbox));
    }

    // ------------------------------------------------------------------ snapshots

    /** "objectClass [filter] from bundle" → service id, for each service the daemon is made of (procbox's aside). */
    private Map<String, Long> namedServices() throws InvalidSyntaxException {
        Map<String, Long> ids = new TreeMap<>();
        for (String clazz : List.of(SandboxService.class.getName(), "jakarta.servlet.Servlet", ApiSurface.class.getName(),
                FingerprintMode.class.getName())) {
            ServiceReference<?>[] refs = context().getServiceReferences(clazz, null);
            assertNotNull("no " + clazz + " is registered", refs);
            for (ServiceReference<?> r : refs) {
                String key = clazz + " " + r.getBundle().getSymbolicName() + " #" + r.getProperty(Constants.SERVICE_ID);
                ids.put(key, (Long) r.getProperty(Constants.SERVICE_ID));
            }
        }
        return ids;
    }

    private long procboxServiceId() throws InvalidSyntaxException {
        ServiceReference<?>[] refs = context().getServiceReferences(SandboxBackend.class.getName(),
                "(" + SandboxBackend.NAME_PROPERTY + "=procbox)");
        assertNotNull("no procbox SandboxBackend is registered", refs);
        assertEquals("procbox SandboxBackend services", 1, refs.length);
        return (Long) refs[0].getProperty(Constants.SERVICE_ID);
    }

    private static Map<String, String> bundleStates(List<Bundle> bundles) {
        Map<String, String> m = new TreeMap<>();
        bundles.forEach(b -> m.put(b.getSymbolicName(), "id " + b.getBundleId() + " state " + b.getState()
                + " version " + b.getVersion()));
        return m;
    }

    private Map<String, String> everyBundleBut(Bundle except) {
        Map<String, String> m = new TreeMap<>();
        for (Bundle b : context().getBundles()) {
            if (b.getBundleId() != except.getBundleId()) {
                m.put(b.getBundleId() + " " + b.getSymbolicName(), "state " + b.getState() + " modified "
                        + b.getLastModified());
            }
        }
        return m;
    }

    /** Each bundle's current wiring, compared by identity: a refresh replaces it. */
    private static Map<String, BundleWiring> wirings(List<Bundle> bundles) {
        Map<String, BundleWiring> m = new TreeMap<>();
        bundles.forEach(b -> m.put(b.getSymbolicName(), b.adapt(BundleWiring.class)));
        return m;
    }

    private static String procboxVersion(SandboxService sandboxes) {
        return sandboxes.backends().stream().filter(b -> b.name().equals("procbox")).map(BackendInfo::version)
                .findFirst().orElse(null);
    }

    private static List<String> names(List<Bundle> bundles) {
        return bundles.stream().map(Bundle::getSymbolicName).toList();
    }

    private static String bundleEventName(int type) {
        return switch (type) {
            case BundleEvent.INSTALLED -> "INSTALLED";
            case BundleEvent.RESOLVED -> "RESOLVED";
            case BundleEvent.STARTING -> "STARTING";
            case BundleEvent.STARTED -> "STARTED";
            case BundleEvent.STOPPING -> "STOPPING";
            case BundleEvent.STOPPED -> "STOPPED";
            case BundleEvent.UPDATED -> "UPDATED";
            case BundleEvent.UNRESOLVED -> "UNRESOLVED";
            case BundleEvent.UNINSTALLED -> "UNINSTALLED";
            case BundleEvent.LAZY_ACTIVATION -> "LAZY_ACTIVATION";
            default -> "event " + type;
        };
    }
}
