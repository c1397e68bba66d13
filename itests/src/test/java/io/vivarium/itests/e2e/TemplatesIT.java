package io.vivarium.itests.e2e;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import com.fasterxml.jackson.databind.JsonNode;

import io.vivarium.api.CreateSandboxRequest;
import io.vivarium.api.TemplateInfo;
import io.vivarium.api.TemplateRequest;
import io.vivarium.client.VivariumClient;
import io.vivarium.client.VivariumException;
import io.vivarium.testkit.Bounded;
import io.vivarium.testkit.LocalRegistry;
import io.vivarium.testkit.OciTestImages;
import io.vivarium.testkit.TcpPorts;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * Operator templates on a real daemon (docs/templates.md), from an image the test makes with umoci
 * and serves from Debian's docker-registry on 127.0.0.1, from its OCI layout and from a
 * {@code docker save} tarball: a procbox and a gVisor sandbox of it run as the image's {@code User}
 * (resolved in the image's own passwd) in its {@code WorkingDir} with its {@code Env}, on its root
 * and not the host's; clients set only what a template lets them; builds that fail say why;
 * templates, their sandboxes and their defaults outlive a daemon restart.
 */
class TemplatesIT {
    private static final String FEATURES = "core,api-v1,procbox,gvisor,qemu,images-oci,fingerprint-sha256,storage-reflink";
    private static final String IMAGE_FACTS = "id -u; id -g; pwd; echo \"$FOO\"; grep -c '^app:x:1234:' /etc/passwd";
    private static final String RUNS_AS_THE_IMAGE = "1234\n2345\n/home/app\nbar\n1\n";

    @RegisterExtension
    static final Daemons daemons = new Daemons();

    @TempDir
    static Path dir;
    static LocalRegistry registry;
    static String layout;
    static String archive;
    static Daemon daemon;
    static Api operator;
    static Api user;
    static boolean gvisor;
    static Path tokenFile;

    @BeforeAll
    static void start() throws Exception {
        Assumptions.assumeTrue(Host.canRunProcbox(), Host.PROCBOX_REASON);
        Assumptions.assumeTrue(OciTestImages.missingTools() == null, OciTestImages.missingTools());
        Assumptions.assumeTrue(LocalRegistry.missing() == null, LocalRegistry.missing());
        gvisor = Host.gvisorMissing() == null;
        layout = OciTestImages.layout(dir.resolve("layout"));
        registry = LocalRegistry.start(dir.resolve("registry"));
        OciTestImages.copy(layout, registry.reference("vivarium/test:1"));
        archive = "docker-archive:" + dir.resolve("image.tar");
        OciTestImages.copy(layout, archive + ":vivarium/test:1");
        Path tokens = Files.writeString(dir.resolve("tokens.txt"), "the-operator default operator\nalice-user alice user\n"
                + "alice-admin alice admin\n");
        tokenFile = tokens;
        startDaemon();
    }

    private static void startDaemon() throws Exception {
        // clients name procbox alone: gVisor only through a template (or an operator)
        daemon = daemons.keepForClass(daemons.start(dir.resolve("state"), List.of("--token-file", tokenFile.toString(),
                "--features", FEATURES, "--client-backends", "procbox"),
                List.of("-Dvivarium.images.insecure.registries=" + registry.host(), "-Dvivarium.default.backend=procbox")));
        operator = new Api(daemon.baseUrl(), "the-operator");
        user = operator.as("alice-admin");
    }

    @AfterAll
    static void stopRegistry() {
        if (registry != null) {
            registry.close();
        }
    }

    @AfterEach
    void deleteSandboxes() throws Exception {
        user.deleteAllSandboxes();
    }

    private static JsonNode made(Map<String, Object> template) throws Exception {
        Api.Response r = operator.post("/v1/templates", template);
        assertTrue(r.status() == 201 || r.status() == 202, r.status() + " " + r.raw().body());
        String name = (String) template.get("name");
        Bounded.until(Duration.ofSeconds(120), "template " + name + " is built", () -> {
            try {
                return !Api.expect(200, operator.get("/v1/templates/" + name)).get("state").asText().equals("building");
            } catch (Exception e) {
                return false;
            }
        });
        return Api.expect(200, operator.get("/v1/templates/" + name));
    }

    private static Map<String, Object> template(String name, String backend, String image, Object... more) {
        Map<String, Object> t = new HashMap<>(Map.of("name", name, "backend", backend, "image", image));
        for (int i = 0; i < more.length; i += 2) {
            t.put((String) more[i], more[i + 1]);
        }
        return t;
    }

    private static String sandboxOf(Api as, Map<String, Object> body) throws Exception {
        return Api.expect(201, as.post("/v1/sandboxes", body)).get("id").asText();
    }

    @Test
    void aProcboxSandboxOfARegistryImageRunsAsItsUserInItsWorkdirOnItsRoot() throws Exception {
        JsonNode t = made(template("reg", "procbox", registry.reference("vivarium/test:1")));
        assertEquals("ready", t.get("state").asText(), t.toString());
        assertEquals(OciTestImages.UID, t.get("image").get("uid").asInt());
        assertEquals(OciTestImages.GID, t.get("image").get("gid").asInt());
        assertEquals(List.of("echo hello"), List.of(t.get("image").get("cmd").get(0).asText()));
        // a build of an image already unpacked (another test's, by the same digest) pulls nothing: 0 of 0
        assertEquals(t.get("build").get("layers").asInt(), t.get("build").get("layers_done").asInt(), t.toString());

        String sb = sandboxOf(user, Map.of("template", "reg"));
        assertEquals(RUNS_AS_THE_IMAGE, Api.sh(user, sb, IMAGE_FACTS));
        assertEquals("", Api.sh(user, sb, "ls /usr 2>/dev/null"), "the image's root (it has no /usr), not the host's");
        assertEquals("ok\n", Api.sh(user, sb, "touch /work/mine && echo ok"), "the workspace is the image user's");
        assertNotEquals("ok\n", Api.sh(user, sb, "touch /etc/mine 2>/dev/null && echo ok"), "the image's root is read-only");

        // a dry-run's twin on the image's root drops to its user through the host's agent, never the image's setpriv
        JsonNode dry = Api.expect(200, user.post("/v1/sandboxes/" + sb + "/dry-run", Map.of("command",
                "id -u; echo \"$FOO\"; pwd; echo gone > /work/dry", "paths", List.of("/work"))));
        assertEquals("1234\nbar\n/home/app\n", dry.get("stdout").asText(), dry.toString());
        assertEquals("", Api.sh(user, sb, "ls /work/dry 2>/dev/null"), "the dry-run's write was put back");

        Api.sh(user, sb, "echo from-the-parent > /work/kept");
        assertEquals("reg", Api.expect(201, user.post("/v1/sandboxes/" + sb + "/branch", Map.of("tag", "of-reg")))
                .get("template").asText(), "the snapshot names its sandbox's template");
        assertEquals("reg", Api.expect(200, user.get("/v1/sandboxes/" + sb)).get("template").asText());
        Api.Response inUse = operator.delete("/v1/templates/reg");
        assertEquals(409, inUse.status(), inUse.raw().body());
        assertTrue(inUse.raw().body().contains(sb), inUse.raw().body());
        Api.expect(204, user.delete("/v1/sandboxes/" + sb));

        String child = user.fork("of-reg", 1).get(0);
        assertEquals(RUNS_AS_THE_IMAGE + "from-the-parent\n", Api.sh(user, child, IMAGE_FACTS + "; cat /work/kept"),
                "a child of the branch runs on the template's root as its user, with the parent's files");
        assertEquals("reg", Api.expect(200, user.get("/v1/sandboxes/" + child)).get("template").asText(),
                "the child is the template's sandbox too");
        Api.Response childUses = operator.delete("/v1/templates/reg");
        assertTrue(childUses.status() == 409 && childUses.raw().body().contains(child), "the child is the template's "
                + "sandbox too: " + childUses.raw().body());
        Api.expect(204, user.delete("/v1/sandboxes/" + child));
        Api.Response snapshotUses = operator.delete("/v1/templates/reg");
        assertEquals(409, snapshotUses.status(), snapshotUses.raw().body());
        assertTrue(snapshotUses.raw().body().contains("of-reg"), "names the snapshot: " + snapshotUses.raw().body());
        Api.expect(204, user.delete("/v1/snapshots/of-reg"));
        Api.expect(204, operator.delete("/v1/templates/reg"));
        assertEquals(404, operator.get("/v1/templates/reg").status());
    }

    @Test
    void aGvisorSandboxOfADockerArchiveRunsAsItsUserInItsWorkdir() throws Exception {
        Assumptions.assumeTrue(gvisor, Host.gvisorMissing());
        JsonNode t = made(template("archived", "gvisor", archive));
        assertEquals("ready", t.get("state").asText(), t.toString());
        String sb = sandboxOf(user, Map.of("template", "archived"));
        assertEquals(RUNS_AS_THE_IMAGE, Api.sh(user, sb, IMAGE_FACTS));
        assertEquals("ok\n", Api.sh(user, sb, "touch /work/mine && echo ok"));

        Api.expect(201, user.post("/v1/sandboxes/" + sb + "/branch", Map.of("tag", "of-gvisor")));
        String child = user.fork("of-gvisor", 1).get(0);
        assertEquals(RUNS_AS_THE_IMAGE + "ok\n", Api.sh(user, child, IMAGE_FACTS + "; test -e /work/mine && touch /work/again "
                + "&& echo ok"), "a restored child runs as the image's user on its root, with the parent's files");
        Api.expect(204, user.delete("/v1/sandboxes/" + child));
        Api.expect(204, user.delete("/v1/snapshots/of-gvisor"));
    }

    @Test
    void aQemuSandboxOfTheRegistryImageRunsAsItsUserInItsWorkdirOnItsRootWithItsVolumes() throws Exception {
        String missing = Host.qemuMissing("default");
        Assumptions.assumeTrue(missing == null, missing);
        JsonNode t = made(template("in-a-vm", "qemu", registry.reference("vivarium/test:1"), "client_may_set",
                List.of("volumes")));
        assertEquals("ready", t.get("state").asText(), t.toString());
        Api.expect(201, user.post("/v1/volumes", Map.of("name", "vm-data", "size_mib", 16)));
        String sb = sandboxOf(user, Map.of("template", "in-a-vm", "volumes",
                List.of(Map.of("name", "vm-data", "mount_path", "/work/data", "read_only", true))));
        try {
            assertEquals(RUNS_AS_THE_IMAGE, Api.sh(user, sb, IMAGE_FACTS));
            assertEquals("", Api.sh(user, sb, "ls /usr 2>/dev/null"), "the image's root (it has no /usr), not the guest's");
            assertEquals("ok\n", Api.sh(user, sb, "touch /work/mine && echo ok"), "the workspace is the image user's");
            assertNotEquals("ok\n", Api.sh(user, sb, "touch /etc/mine 2>/dev/null && echo ok"), "the image's root is read-only");
            assertEquals("1\n", Api.sh(user, sb, "grep -c ' /work/data ext4 ro,' /proc/mounts"), "the volume is mounted, "
                    + "by the guest's own busybox where the image has no mount");

            JsonNode dry = Api.expect(200, user.post("/v1/sandboxes/" + sb + "/dry-run", Map.of("command",
                    "id -u; echo \"$FOO\"; pwd; echo gone > /work/dry", "paths", List.of("/work"))));
            assertEquals("1234\nbar\n/home/app\n", dry.get("stdout").asText(), dry.toString());
            assertEquals("", Api.sh(user, sb, "ls /work/dry 2>/dev/null"), "the dry-run's write was put back");

            // a boot in a new QEMU switches to the image's root again and mounts the volume again
            assertEquals("stopped", Api.expect(200, user.post("/v1/vms/" + sb + "/stop", null)).get("status").asText());
            assertEquals("running", Api.expect(200, user.post("/v1/vms/" + sb + "/start", null)).get("status").asText());
            assertEquals(RUNS_AS_THE_IMAGE + "1\n", Api.sh(user, sb, IMAGE_FACTS
                    + "; grep -c ' /work/data ext4 ro,' /proc/mounts"), "after a power cycle");
        } finally {
            Api.expect(204, user.delete("/v1/sandboxes/" + sb));
            Api.expect(204, user.delete("/v1/volumes/vm-data"));
        }

        // a VM's branch and its child: restored on the same root disk, the image's user, the parent's files
        String parent = sandboxOf(user, Map.of("template", "in-a-vm"));
        Api.sh(user, parent, "echo from-the-parent > /work/kept");
        Api.expect(201, user.post("/v1/sandboxes/" + parent + "/branch", Map.of("tag", "of-vm")));
        Api.expect(204, user.delete("/v1/sandboxes/" + parent));
        String child = user.fork("of-vm", 1).get(0);
        assertEquals(RUNS_AS_THE_IMAGE + "from-the-parent\n" + child + "\n", Api.sh(user, child, IMAGE_FACTS
                + "; cat /work/kept; cat /proc/sys/kernel/hostname"), "the child runs on the image's root as its user, named as itself");
        Api.expect(204, user.delete("/v1/sandboxes/" + child));
        Api.expect(204, user.delete("/v1/snapshots/of-vm"));
        Api.expect(204, operator.delete("/v1/templates/in-a-vm"));

        // a setup on qemu: run once in a VM of the template, whose children then start from it
        JsonNode setUp = made(template("vm-set-up", "qemu", registry.reference("vivarium/test:1"), "setup",
                List.of("sh", "-c", "id -u > /work/by; cat /proc/sys/kernel/random/uuid > /work/once")));
        assertEquals("ready", setUp.get("state").asText(), setUp.toString());
        String vm = sandboxOf(user, Map.of("template", "vm-set-up"));
        assertEquals("1234\n" + RUNS_AS_THE_IMAGE, Api.sh(user, vm, "cat /work/by; " + IMAGE_FACTS));
        Api.expect(204, user.delete("/v1/sandboxes/" + vm));
        Api.expect(204, operator.delete("/v1/templates/vm-set-up"));
    }

    @Test
    void aTemplatesSetupRunsOnceAsItsUserAndEverySandboxOfItStartsFromWhatItMade() throws Exception {
        JsonNode t = made(template("set-up", "procbox", layout, "setup", List.of("sh", "-c",
                "id -u > /work/by; echo \"$FOO\" > /work/env; cat /proc/sys/kernel/random/uuid > /work/once")));
        assertEquals("ready", t.get("state").asText(), t.toString());
        String a = sandboxOf(user, Map.of("template", "set-up"));
        String b = sandboxOf(user, Map.of("template", "set-up"));
        assertEquals("1234\nbar\n", Api.sh(user, a, "cat /work/by /work/env"), "the setup ran as the image's user, with its env");
        assertEquals(Api.sh(user, a, "cat /work/once"), Api.sh(user, b, "cat /work/once"), "once, not once per sandbox");
        Api.sh(user, a, "echo mine > /work/own");
        assertEquals("", Api.sh(user, b, "ls /work/own 2>/dev/null"), "each sandbox has its own copy of what it made");
        assertEquals(RUNS_AS_THE_IMAGE, Api.sh(user, b, IMAGE_FACTS), "on the image's root, as its user");
        assertEquals("set-up", Api.expect(200, user.get("/v1/sandboxes/" + a)).get("template").asText());
        Api.Response memory = user.post("/v1/sandboxes", Map.of("template", "set-up", "memory_limit_mib", 128));
        assertEquals(403, memory.status(), memory.raw().body());
        for (JsonNode s : Api.expect(200, user.get("/v1/snapshots"))) {
            assertNotEquals("set-up", s.get("tag").asText(), "the setup's snapshot is the daemon's, no tenant's");
        }

        Api.Response inUse = operator.delete("/v1/templates/set-up");
        assertEquals(409, inUse.status(), inUse.raw().body());
        Api.expect(204, user.delete("/v1/sandboxes/" + a));
        Api.expect(204, user.delete("/v1/sandboxes/" + b));
        Api.expect(204, operator.delete("/v1/templates/set-up"));

        JsonNode failed = made(template("set-up", "procbox", layout, "setup", List.of("sh", "-c", "echo broken >&2; exit 3")));
        assertEquals("failed", failed.get("state").asText(), failed.toString());
        assertTrue(failed.get("build").get("error").asText().contains("broken"), failed.toString());
        Api.expect(204, operator.delete("/v1/templates/set-up"));
        Api.Response withVolumes = operator.post("/v1/templates", template("set-up", "procbox", layout, "setup",
                List.of("true"), "client_may_set", List.of("memory_limit_mib")));
        assertEquals(400, withVolumes.status(), withVolumes.raw().body());
    }

    @Test
    void clientsNameOnlyTheBackendsTheOperatorAllowsWhichBackendsSays() throws Exception {
        Api.Response named = user.post("/v1/sandboxes", Map.of("backend", "gvisor"));
        assertEquals(403, named.status(), named.raw().body());
        assertTrue(named.raw().body().contains("--client-backends"), named.raw().body());
        Api.Response build = user.post("/v1/snapshots", Map.of("tag", "on-gvisor", "backend", "gvisor"));
        assertEquals(403, build.status(), build.raw().body());
        Api.expect(204, user.delete("/v1/sandboxes/" + sandboxOf(user, Map.of("backend", "procbox"))));
        Api.expect(204, user.delete("/v1/sandboxes/" + sandboxOf(user, Map.of())));
        Api.Response byOperator = operator.post("/v1/sandboxes", Map.of("backend", "gvisor"));
        assertNotEquals(403, byOperator.status(), "an operator names any backend: " + byOperator.raw().body());
        if (byOperator.status() == 201) {
            Api.expect(204, operator.delete("/v1/sandboxes/" + byOperator.body().get("id").asText()));
        }
        Map<String, Boolean> mayName = new HashMap<>();
        for (JsonNode b : Api.expect(200, user.get("/v1/backends"))) {
            mayName.put(b.get("name").asText(), b.get("client_may_name").asBoolean());
        }
        assertEquals(Map.of("procbox", true, "gvisor", false, "qemu", false), mayName);
    }

    @Test
    void aTemplateOfTheLayoutSetsItsOwnUserAndEnvAndLetsClientsSetOnlyWhatItLists() throws Exception {
        made(template("layout", "procbox", layout, "user", "2000:3000", "env", Map.of("FOO", "template"), "workdir", "/work",
                "client_may_set", List.of("memory_limit_mib")));
        Api.Response forbidden = user.post("/v1/sandboxes", Map.of("template", "layout", "pids_limit", 64));
        assertEquals(403, forbidden.status(), forbidden.raw().body());
        assertTrue(forbidden.raw().body().contains("pids_limit"), forbidden.raw().body());
        Api.Response named = user.post("/v1/sandboxes", Map.of("template", "layout", "backend", "procbox"));
        assertEquals(403, named.status(), named.raw().body());

        String sb = sandboxOf(user, Map.of("template", "layout", "memory_limit_mib", 128));
        assertEquals("2000\n3000\n/work\ntemplate\n", Api.sh(user, sb, "id -u; id -g; pwd; echo \"$FOO\""));
        assertEquals(128, Api.expect(200, user.get("/v1/sandboxes/" + sb)).get("memory_limit_mib").asInt());
    }

    @Test
    void anImageThatRunsAsRootRunsAsTheBackendsUnprivilegedUserNeverAsRoot() throws Exception {
        made(template("as-root", "procbox", layout, "user", "root"));
        assertEquals(0, Api.expect(200, operator.get("/v1/templates/as-root")).get("image").get("uid").asInt(),
                "the image's own facts: root");
        String sb = sandboxOf(user, Map.of("template", "as-root"));
        assertEquals("65534\n65534\n", Api.sh(user, sb, "id -u; id -g"));
        if (gvisor) {
            made(template("as-root-gvisor", "gvisor", layout, "user", "0:0"));
            String onGvisor = sandboxOf(user, Map.of("template", "as-root-gvisor"));
            assertEquals("65534\n65534\n", Api.sh(user, onGvisor, "id -u; id -g"));
        }
        if (Host.qemuMissing("default") == null) {
            made(template("as-root-qemu", "qemu", layout, "user", "0"));
            String inVm = sandboxOf(user, Map.of("template", "as-root-qemu"));
            assertEquals("65534\n65534\nok\n", Api.sh(user, inVm, "id -u; id -g; touch /work/mine && echo ok"));
        }
    }

    @Test
    void onlyAnOperatorMakesTemplatesEveryRoleSeesThemAndBadOnesSayWhy() throws Exception {
        Api.Response byUser = user.post("/v1/templates", template("mine", "procbox", layout));
        assertEquals(403, byUser.status(), byUser.raw().body());
        Api.Response malformed = operator.post("/v1/templates", template("bad", "procbox", "ubuntu:24.04"));
        assertEquals(400, malformed.status(), malformed.raw().body());
        Api.Response unknownField = operator.outsideTheContract().post("/v1/templates", template("bad", "procbox", layout,
                "entrypoint", "x"));
        assertEquals(400, unknownField.status(), unknownField.raw().body());
        assertEquals(404, user.post("/v1/sandboxes", Map.of("template", "none")).status());

        int closed = TcpPorts.free();
        JsonNode failed = made(template("unreachable", "procbox", "docker://127.0.0.1:" + closed + "/vivarium/test:1"));
        assertEquals("failed", failed.get("state").asText(), failed.toString());
        assertTrue(failed.get("build").get("error").asText().contains("(502)"), failed.toString());
        Api.Response notReady = user.post("/v1/sandboxes", Map.of("template", "unreachable"));
        assertEquals(409, notReady.status(), notReady.raw().body());

        JsonNode listed = Api.expect(200, user.get("/v1/templates"));
        assertTrue(listed.toString().contains("\"unreachable\""), listed.toString());
        Api.expect(204, operator.delete("/v1/templates/unreachable"));
        assertEquals(403, user.delete("/v1/templates/unreachable").status());
    }

    @Test
    void theJavaClientMakesListsAndDeletesTemplatesAndCreatesFromThem() throws Exception {
        VivariumClient client = VivariumClient.connect(URI.create(daemon.baseUrl()), "the-operator");
        TemplateInfo made = client.templates().create(new TemplateRequest("client", "procbox", layout, null, null, null, null,
                Map.of("LEVEL", "1"), null, null, null, null, null, List.of("pids_limit")));
        assertEquals("client", made.name());
        Bounded.until(Duration.ofSeconds(120), "template client is built",
                () -> !client.templates().get("client").state().equals(TemplateInfo.BUILDING));
        assertEquals(TemplateInfo.READY, client.templates().get("client").state());
        assertEquals(OciTestImages.UID, client.templates().get("client").image().uid());
        assertTrue(client.templates().list().stream().anyMatch(t -> t.name().equals("client")));

        VivariumClient alice = VivariumClient.connect(URI.create(daemon.baseUrl()), "alice-admin");
        String sb = alice.sandboxes().create(new CreateSandboxRequest(null, null, null, null, 64, null, null, null, null, null,
                "client")).id();
        assertEquals("1\n", Api.sh(user, sb, "echo \"$LEVEL\""));
        VivariumException inUse = assertThrows(VivariumException.class, () -> client.templates().delete("client"));
        assertEquals(409, inUse.status());
        alice.sandboxes().delete(sb);
        client.templates().delete("client");
        assertEquals(404, assertThrows(VivariumException.class, () -> client.templates().get("client")).status());
    }

    @Test
    void theCommandLineMakesATemplateShowingItsBuildAndASandboxOfIt() throws Exception {
        Map<String, String> asOperator = Map.of("VIVARIUM_URL", daemon.baseUrl(), "VIVARIUM_TOKEN", "the-operator");
        CommandLine.Run made = CommandLine.run(dir, asOperator, "template", "create", "cli", "--image", archive, "--backend",
                "procbox", "--env", "LEVEL=2");
        assertEquals(0, made.code(), made.err());
        assertTrue(made.out().startsWith("cli  ready  sha256:"), made.out());
        CommandLine.Run listed = CommandLine.run(dir, asOperator, "template", "ls");
        assertTrue(listed.out().contains("cli") && listed.out().contains(archive), listed.out());

        CommandLine.Run created = CommandLine.run(dir, Map.of("VIVARIUM_URL", daemon.baseUrl(), "VIVARIUM_TOKEN", "alice-admin"),
                "sandbox", "create", "--template", "cli", "--json");
        assertEquals(0, created.code(), created.err());
        String sb = Api.JSON.readTree(created.out()).get("id").asText();
        assertEquals("2\n", Api.sh(user, sb, "echo \"$LEVEL\""));
        Api.expect(204, user.delete("/v1/sandboxes/" + sb));

        CommandLine.Run failed = CommandLine.run(dir, asOperator, "template", "create", "nowhere", "--image",
                "oci:" + dir.resolve("no-such-layout") + ":app", "--backend", "procbox");
        assertEquals(1, failed.code(), failed.out() + failed.err());
        assertTrue(failed.err().contains("failed to build"), failed.err());
        assertEquals(0, CommandLine.run(dir, asOperator, "template", "rm", "cli", "nowhere").code());
    }

    @Test
    void templatesTheirSandboxesAndTheirDefaultsOutliveARestart() throws Exception {
        made(template("kept", "procbox", layout));
        String sb = sandboxOf(user, Map.of("template", "kept"));
        daemon.stop();
        startDaemon();
        assertEquals("ready", Api.expect(200, operator.get("/v1/templates/kept")).get("state").asText());
        assertEquals(RUNS_AS_THE_IMAGE, Api.sh(user, sb, IMAGE_FACTS));
        Api.expect(204, user.delete("/v1/sandboxes/" + sb));
        Api.expect(204, operator.delete("/v1/templates/kept"));
    }
}
