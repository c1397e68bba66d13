package io.vivarium.core.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import io.vivarium.api.ApiException;
import io.vivarium.api.Capability;
import io.vivarium.api.Caller;
import io.vivarium.api.CreateSandboxRequest;
import io.vivarium.api.ExecRequest;
import io.vivarium.api.Progress;
import io.vivarium.api.Role;
import io.vivarium.api.SandboxInfo;
import io.vivarium.api.TemplateInfo;
import io.vivarium.api.TemplateRequest;
import io.vivarium.api.spi.InstanceSpec;
import io.vivarium.api.spi.RootImage;
import io.vivarium.api.spi.RootImages;
import io.vivarium.state.file.internal.FileStores;
import io.vivarium.testkit.Bounded;
import io.vivarium.testkit.FakeBackend;

/** Templates over a whole core with a fake backend and a fake images bundle whose pulls the test releases. */
class TemplatesTest {
    private static final Caller OPERATOR = new Caller("ops", Role.OPERATOR);
    private static final Caller ALICE = new Caller("alice", Role.ADMIN);
    private static final String IMAGE = "oci:/images/app:1";

    @TempDir
    Path tmp;
    private final FakeBackend backend = new FakeBackend();
    private final Pulls pulls = new Pulls();
    private Path rootfs;
    private WholeCore core;

    /** A fake images bundle: a pull waits until the test releases it, then gives the image (or fails). */
    final class Pulls implements RootImages {
        final Map<String, CountDownLatch> gates = new ConcurrentHashMap<>();
        final Set<String> removed = ConcurrentHashMap.newKeySet();
        volatile ApiException failure;

        CountDownLatch gate(String reference) {
            return gates.computeIfAbsent(reference, r -> new CountDownLatch(1));
        }

        @Override
        public Optional<String> unavailable() {
            return Optional.empty();
        }

        @Override
        public void checkReference(String reference) {
            if (!reference.startsWith("oci:/")) {
                throw ApiException.badRequest("image '" + reference + "' is malformed");
            }
        }

        @Override
        public RootImage pull(String reference, Progress progress) {
            progress.step(LAYERS, 0, 2);
            try {
                assertTrue(gate(reference).await(10, TimeUnit.SECONDS), "the test released the pull");
            } catch (InterruptedException e) {
                throw new IllegalStateException(e);
            }
            if (failure != null) {
                throw failure;
            }
            progress.step(LAYERS, 2, 2);
            return new RootImage("sha256:" + "a".repeat(64), rootfs, Map.of("FOO", "bar", "PATH", "/opt/bin:/bin"), "/home/app",
                    "app", 1234, 2345, List.of("/bin/sh", "-c"), List.of("echo hello"));
        }

        @Override
        public void remove(String digest) {
            removed.add(digest);
        }
    }

    @BeforeEach
    void setUp() throws Exception {
        rootfs = Files.createDirectories(tmp.resolve("rootfs"));
        Files.createDirectories(rootfs.resolve("etc"));
        Files.writeString(rootfs.resolve("etc/passwd"), "root:x:0:0::/root:/bin/sh\nweb:x:33:33::/var/www:/bin/sh\n");
        Files.writeString(rootfs.resolve("etc/group"), "root:x:0:\nstaff:x:50:\n");
        Set<String> caps = new HashSet<>(backend.capabilities);
        caps.add(Capability.ROOT_IMAGE);
        backend.capabilities = Set.copyOf(caps);
        core = start();
    }

    private WholeCore start() throws Exception {
        WholeCore m = new WholeCore();
        m.backendArrived(new BackendRegistry.Entry("fake", backend, "test.bundle", "1.0.0", 1));
        m.bindStateStores(new FileStores(), Map.of());
        m.bindRootImages(pulls);
        m.start(tmp.resolve("state"), "", Duration.ZERO);
        return m;
    }

    @AfterEach
    void tearDown() {
        pulls.gates.values().forEach(CountDownLatch::countDown);
        core.deactivate();
    }

    private TemplateRequest template(String name, String user, List<String> clientMaySet) {
        return new TemplateRequest(name, null, IMAGE, null, 256, null, null, Map.of("FOO", "template", "LEVEL", "3"), null, user,
                null, null, null, clientMaySet);
    }

    private TemplateInfo ready(String name) {
        pulls.gate(IMAGE).countDown();
        Bounded.until(Duration.ofSeconds(10), "template " + name + " is built", () -> !core.core().templates()
                .get(OPERATOR, name).state().equals(TemplateInfo.BUILDING));
        return core.core().templates().get(OPERATOR, name);
    }

    @Test
    void aTemplateBuildsThenMakesSandboxesOnItsImageWithItsValuesOverTheImages() {
        TemplateInfo made = core.core().templates().create(OPERATOR, template("app", null, List.of()));
        assertEquals(TemplateInfo.BUILDING, made.state(), "not ready within the wait: 202");
        assertEquals(2, made.build().layers());
        ApiException early = assertThrows(ApiException.class, () -> core.create(ALICE, fromTemplate("app")));
        assertEquals(409, early.status(), early.getMessage());

        TemplateInfo built = ready("app");
        assertEquals(TemplateInfo.READY, built.state());
        assertEquals(1234, built.image().uid());
        assertEquals(List.of("echo hello"), built.image().cmd());

        SandboxInfo sb = core.create(ALICE, fromTemplate("app"));
        InstanceSpec spec = backend.creates.get(backend.creates.size() - 1);
        assertEquals(rootfs, spec.root().rootfs());
        assertEquals(1234, spec.root().uid());
        assertEquals(256, spec.memoryLimitMib(), "the template's limit");
        core.exec(ALICE, sb.id(), new ExecRequest(List.of("id"), null, Map.of("LEVEL", "4"), null, null, null));
        ExecRequest seen = backend.execs.get(backend.execs.size() - 1);
        assertEquals("/home/app", seen.cwd(), "the image's WorkingDir");
        assertEquals("template", seen.env().get("FOO"), "the template's env over the image's");
        assertEquals("4", seen.env().get("LEVEL"), "the request's over the template's");
        assertEquals("/opt/bin:/bin", seen.env().get("PATH"), "the image's PATH");

        ApiException inUse = assertThrows(ApiException.class, () -> core.core().templates().delete(OPERATOR, "app"));
        assertEquals(409, inUse.status());
        assertTrue(inUse.getMessage().contains(sb.id()), inUse.getMessage());
        core.delete(ALICE, sb.id());
        core.core().templates().delete(OPERATOR, "app");
        assertEquals(404, assertThrows(ApiException.class, () -> core.core().templates().get(OPERATOR, "app")).status());
        assertEquals(Set.of("sha256:" + "a".repeat(64)), pulls.removed, "its image goes with the last template of it");
    }

    @Test
    void aClientSetsOnlyWhatTheTemplateLetsItAndTheUserResolvesInTheImage() {
        core.core().templates().create(OPERATOR, template("web", "web:staff", List.of("memory_limit_mib")));
        ready("web");
        ApiException forbidden = assertThrows(ApiException.class, () -> core.create(ALICE, new CreateSandboxRequest(null, null,
                null, null, 64, null, null, null, null, null, "web")));
        assertEquals(403, forbidden.status());
        assertTrue(forbidden.getMessage().contains("pids_limit") && forbidden.getMessage().contains("memory_limit_mib"),
                forbidden.getMessage());
        ApiException backendNamed = assertThrows(ApiException.class, () -> core.create(ALICE, new CreateSandboxRequest("fake",
                null, null, null, null, null, null, null, null, null, "web")));
        assertEquals(403, backendNamed.status());

        core.create(ALICE, new CreateSandboxRequest(null, 512, null, null, null, null, null, null, null, null, "web"));
        InstanceSpec spec = backend.creates.get(backend.creates.size() - 1);
        assertEquals(512, spec.memoryLimitMib());
        assertEquals(33, spec.root().uid(), "web in the image's /etc/passwd");
        assertEquals(50, spec.root().gid(), "staff in the image's /etc/group");
    }

    @Test
    void aVolumeOfASandboxOnAnImageMountsOnlyWhereAMountPointCanBe() throws Exception {
        core.core().templates().create(OPERATOR, template("vols", null, List.of("volumes")));
        ready("vols");
        ApiException nowhere = assertThrows(ApiException.class, () -> core.create(ALICE, new CreateSandboxRequest(null, null,
                null, null, null, null, null, null, List.of(new io.vivarium.api.VolumeMount("data", "/srv/data", null, false)),
                null, "vols")));
        assertEquals(400, nowhere.status());
        assertTrue(nowhere.getMessage().contains("/srv/data") && nowhere.getMessage().contains("/work"), nowhere.getMessage());
        ApiException escaping = assertThrows(ApiException.class, () -> core.create(ALICE, new CreateSandboxRequest(null, null,
                null, null, null, null, null, null, List.of(new io.vivarium.api.VolumeMount("data", "/etc/../x", null, false)),
                null, "vols")));
        assertEquals(400, escaping.status(), escaping.getMessage());
    }

    @Test
    void badTemplatesAreRefusedBeforeAnythingIsRecorded() {
        Templates templates = core.core().templates();
        for (TemplateRequest bad : List.of(
                new TemplateRequest("Bad Name", null, IMAGE, null, null, null, null, null, null, null, null, null, null, null),
                new TemplateRequest("x", null, "ubuntu", null, null, null, null, null, null, null, null, null, null, null),
                new TemplateRequest("x", null, null, null, null, null, null, null, null, null, null, null, null, null),
                new TemplateRequest("x", null, IMAGE, null, null, null, null, null, "relative", null, null, null, null, null),
                new TemplateRequest("x", null, IMAGE, null, null, null, null, null, null, "a b", null, null, null, null),
                new TemplateRequest("x", null, IMAGE, null, null, null, null, null, null, null, null, null, null, List.of("backend")),
                new TemplateRequest("x", null, IMAGE, null, 1, null, null, null, null, null, null, null, null, null),
                new TemplateRequest("x", "nosuch", IMAGE, null, null, null, null, null, null, null, null, null, null, null),
                new TemplateRequest("x", null, IMAGE, null, null, null, null, null, null, null, null, null, null, null,
                        List.of()),
                new TemplateRequest("x", null, IMAGE, null, null, null, null, null, null, null, null, null, null, null,
                        java.util.Arrays.asList("sh", null)),
                new TemplateRequest("x", null, IMAGE, null, null, null, null, null, null, null, null, null, null,
                        List.of("memory_limit_mib"), List.of("true")),
                new TemplateRequest("x", null, IMAGE, null, null, null, null, null, null, null, null, null,
                        List.of(new io.vivarium.api.VolumeMount("data", "/work/data", null, false)), null, List.of("true")))) {
            ApiException e = assertThrows(ApiException.class, () -> templates.create(OPERATOR, bad), bad.toString());
            assertEquals(400, e.status(), bad + ": " + e.getMessage());
        }
        assertEquals(List.of(), templates.list(OPERATOR));
        templates.create(OPERATOR, template("app", null, List.of()));
        assertEquals(409, assertThrows(ApiException.class, () -> templates.create(OPERATOR, template("app", null, List.of())))
                .status());
        assertEquals(404, assertThrows(ApiException.class, () -> core.create(ALICE, fromTemplate("none"))).status());
    }

    @Test
    void aFailedBuildSaysWhyAndABuildUnderWayWhenTheDaemonStopsStartsAgain() throws Exception {
        pulls.failure = new ApiException(502, "the registry 127.0.0.1:1 did not give it");
        core.core().templates().create(OPERATOR, template("broken", null, List.of()));
        TemplateInfo failed = ready("broken");
        assertEquals(TemplateInfo.FAILED, failed.state());
        assertTrue(failed.build().error().contains("did not give it (502)"), failed.build().error());
        assertNull(failed.image());
        ApiException notReady = assertThrows(ApiException.class, () -> core.create(ALICE, fromTemplate("broken")));
        assertEquals(409, notReady.status());
        assertTrue(notReady.getMessage().contains("did not give it"), notReady.getMessage());

        pulls.failure = null;
        pulls.gates.clear();
        core.core().templates().create(OPERATOR, new TemplateRequest("later", null, "oci:/images/later:1", null, null, null, null,
                null, null, null, null, null, null, null));
        core.deactivate();
        core = start();
        assertEquals(TemplateInfo.BUILDING, core.core().templates().get(OPERATOR, "later").state());
        pulls.gate("oci:/images/later:1").countDown();
        Bounded.until(Duration.ofSeconds(10), "the build started again ends", () -> core.core().templates()
                .get(OPERATOR, "later").state().equals(TemplateInfo.READY));
    }

    private static CreateSandboxRequest fromTemplate(String name) {
        return new CreateSandboxRequest(null, null, null, null, null, null, null, null, null, null, name);
    }
}
