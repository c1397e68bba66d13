package io.vivarium.itests.e2e;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

import com.fasterxml.jackson.databind.JsonNode;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * The snapshot registry against the assembled daemon with procbox: build, fork N children that
 * each see the template's files and none of each other's writes, branch a running child into a new
 * tag, compact, the chain-safe delete, tenants, traversal attempts and every status code these
 * routes answer (except the branch's 504, which needs a capture of more than 180 s).
 */
class SnapshotsIT {
    @RegisterExtension
    static final Daemons daemons = new Daemons();

    @TempDir
    static Path dir;

    static Daemon daemon;
    static Api acme;
    static Api acmeUser;
    static Api globex;

    @BeforeAll
    static void start() throws Exception {
        Assumptions.assumeTrue(Host.canRunProcbox(), Host.PROCBOX_REASON);
        Path tokens = dir.resolve("tokens.txt");
        Files.writeString(tokens, "acme-admin acme admin\nacme-user acme user\nglobex-admin globex admin\n");
        daemon = daemons.start(dir.resolve("state"), List.of("--token-file", tokens.toString()));
        acme = new Api(daemon.baseUrl(), "acme-admin");
        acmeUser = acme.as("acme-user");
        globex = acme.as("globex-admin");
    }

    @AfterAll
    static void noLeftovers() throws Exception {
        if (acme != null) {
            acme.deleteAllSandboxes();
            globex.deleteAllSandboxes();
        }
    }

    private static void expect(int status, Api.Response r) {
        assertEquals(status, r.status(), String.valueOf(r.body()));
        if (status >= 400) {
            assertFalse(r.error().isBlank(), "an error says what to fix: " + r.body());
        }
    }

    private static JsonNode build(String tag, String setup) throws Exception {
        Api.Response r = acme.post("/v1/snapshots", Map.of("tag", tag, "boot_wait_secs", 0,
                "setup", List.of("sh", "-c", setup)));
        expect(201, r);
        return r.body();
    }

    private static List<String> fork(Api api, String tag, int n) throws Exception {
        Api.Response r = api.post("/v1/sandboxes", Map.of("snapshot_tag", tag, "n", n));
        expect(201, r);
        assertEquals(n, r.body().size());
        List<String> ids = new ArrayList<>();
        r.body().forEach(sb -> {
            assertEquals(tag, sb.get("image").asText());
            assertEquals(tag, sb.get("snapshot_tag").asText(), "the seed's field");
            assertEquals("running", sb.get("status").asText());
            ids.add(sb.get("id").asText());
        });
        return ids;
    }

    @Test
    void twentyChildrenEachSeeTheTemplateAndKeepTheirWritesToThemselves() throws Exception {
        JsonNode base = build("twenty", "echo template > /work/t.txt");
        assertEquals("ready", base.get("status").asText());
        assertTrue(base.get("bootable").asBoolean());
        assertEquals("files", base.get("captures").asText());
        assertFalse(base.has("branched_from"));

        List<String> children = fork(acme, "twenty", 20);
        assertEquals(20, new TreeSet<>(children).size());
        for (String id : children) {
            assertEquals("template\n", Api.sh(acme, id, "cat /work/t.txt; echo " + id + " > /work/own.txt"));
        }
        for (String id : children) {
            assertEquals("own.txt\nt.txt\n" + id + "\n", Api.sh(acme, id, "ls /work; cat /work/own.txt"),
                    "a child sees its own write and no other's");
        }
        String late = fork(acme, "twenty", 1).get(0);
        assertEquals("t.txt\n", Api.sh(acme, late, "ls /work"), "the template is unchanged by its children");
        for (String id : children) {
            expect(204, acme.delete("/v1/sandboxes/" + id));
        }
    }

    @Test
    void buildsAndForksAnswerEveryStatusTheyDocument() throws Exception {
        build("base", "echo template > /work/t.txt");
        expect(400, acme.post("/v1/snapshots", Map.of("tag", "base")));
        expect(400, acme.outsideTheContract().post("/v1/snapshots", Map.of("tag", "x", "boot_wait_secs", 601)));
        expect(400, acme.post("/v1/snapshots", Map.of("tag", "x", "setup", List.of("sh", "-c", "exit 3"))));
        assertFalse(acme.get("/v1/snapshots").body().toString().contains("\"x\""), "a failed build leaves no tag");
        expect(400, acme.post("/v1/sandboxes", Map.of("snapshot_tag", "base", "disk_limit_mib", 64)));

        Api.Response list = acme.get("/v1/snapshots");
        expect(200, list);
        assertTrue(list.body().toString().contains("\"base\""));
        Api.Response info = acme.get("/v1/snapshots/base/info");
        expect(200, info);
        assertEquals(0, info.body().get("chain_depth").asInt());
        assertTrue(info.body().get("logical_bytes").asLong() > 0);

        expect(404, acme.post("/v1/sandboxes", Map.of("snapshot_tag", "nope", "n", 1)));
        expect(410, acme.post("/v1/sandboxes", Map.of("snapshot_tag", "base", "live_fork", true)));
        expect(410, acme.post("/v1/sandboxes", Map.of("snapshot_tag", "base", "hugepages", true)));
        expect(400, acme.outsideTheContract().post("/v1/sandboxes", Map.of("snapshot_tag", "base", "n", 0)));
        expect(400, acme.outsideTheContract().post("/v1/sandboxes", Map.of("snapshot_tag", "base", "n", 1001)));
        Api.Response netns = acme.post("/v1/sandboxes", Map.of("snapshot_tag", "base", "n", 1, "per_child_netns", true));
        expect(201, netns);

        int before = acme.get("/v1/sandboxes").body().size();
        Api.Response full = acme.post("/v1/sandboxes", Map.of("snapshot_tag", "base", "n", 1000));
        expect(503, full);
        assertTrue(full.raw().headers().firstValue("Retry-After").isPresent(), "a capacity refusal says when to retry");
        assertEquals(before, acme.get("/v1/sandboxes").body().size(), "nothing was started");

        build("broken", "true");
        Path image = daemon.stateDir().resolve("snapshots/acme/broken/image/workspace.ext4");
        assertTrue(Files.isRegularFile(image), image.toString());
        Files.delete(image);
        Api.Response broken = acme.post("/v1/sandboxes", Map.of("snapshot_tag", "broken"));
        expect(409, broken);
        assertTrue(broken.error().contains(image.toString()), broken.error());
        JsonNode listed = find(acme.get("/v1/snapshots").body(), "broken");
        assertFalse(listed.get("bootable").asBoolean());
        assertTrue(listed.get("warning").asText().contains("workspace.ext4"), listed.toString());
        expect(204, acme.delete("/v1/snapshots/broken"));
    }

    @Test
    void tagsAreTenantsOwnAndPlainNames() throws Exception {
        build("mine", "true");
        expect(404, globex.get("/v1/snapshots/mine/info"));
        expect(404, globex.post("/v1/sandboxes", Map.of("snapshot_tag", "mine")));
        expect(404, globex.delete("/v1/snapshots/mine"));
        assertEquals(0, globex.get("/v1/snapshots").body().size());
        // tags the document's pattern refuses (a snapshot_tag to fork from is any string there)
        for (String bad : List.of("..", "../mine", "a/b", "/etc/passwd", ".hidden", "%2e%2e", "x".repeat(65))) {
            expect(400, acme.outsideTheContract().post("/v1/snapshots", Map.of("tag", bad)));
            expect(400, acme.post("/v1/sandboxes", Map.of("snapshot_tag", bad)));
            expect(400, acme.outsideTheContract().post("/v1/snapshots/mine/compact", Map.of("to", bad)));
        }
        for (String path : List.of("/v1/snapshots/%2e%2e/info", "/v1/snapshots/..%2Fmine/info", "/v1/snapshots/.hidden/info",
                "/v1/snapshots/%2Fetc/info")) {
            Api.Response r = acme.outsideTheContract().get(path);
            assertTrue(r.status() == 400 || r.status() == 404, path + ": " + r.status());
            assertFalse(r.error().isBlank(), path);
        }
        try (var walk = Files.list(daemon.stateDir().resolve("snapshots"))) {
            assertEquals(Set.of("acme"), walk.map(p -> p.getFileName().toString()).collect(java.util.stream.Collectors.toSet()),
                    "nothing was written outside the tenant's own directory");
        }
    }

    @Test
    void aBranchOfARunningChildForksChildrenWithItsFiles() throws Exception {
        build("origin", "echo template > /work/t.txt");
        String parent = fork(acme, "origin", 1).get(0);
        Api.sh(acme, parent, "echo from-parent > /work/branch.txt; sleep 600 > /dev/null 2>&1 &");
        Api.Response branched = acme.post("/v1/sandboxes/" + parent + "/branch", Map.of("tag", "br"));
        expect(201, branched);
        assertEquals(parent, branched.body().get("branched_from").asText());
        assertTrue(branched.body().get("pause_ms").asLong() >= 0);
        assertEquals("files", branched.body().get("captures").asText(), "a procbox branch captures files only");
        assertEquals("origin", branched.body().get("parent_tag").asText());
        assertEquals("alive\n", Api.sh(acme, parent, "pgrep -x sleep > /dev/null && echo alive"),
                "the parent keeps running, its processes too");

        String child = fork(acme, "br", 1).get(0);
        assertEquals("from-parent\ntemplate\n", Api.sh(acme, child, "cat /work/branch.txt /work/t.txt"));
        assertEquals("", Api.sh(acme, child, "pgrep -x sleep || true"), "no process is captured");

        expect(409, acme.post("/v1/sandboxes/" + parent + "/branch", Map.of("tag", "br")));
        expect(400, acme.outsideTheContract().post("/v1/sandboxes/" + parent + "/branch", Map.of("tag", "../br")));
        expect(404, acme.post("/v1/sandboxes/sb-nope/branch", Map.of("tag", "x")));
        expect(404, globex.post("/v1/sandboxes/" + parent + "/branch", Map.of("tag", "x")));
        expect(410, acme.post("/v1/sandboxes/" + parent + "/branch", Map.of("tag", "x", "mode", "live")));
        expect(410, acme.post("/v1/sandboxes/" + parent + "/branch", Map.of("tag", "x", "diff", true)));
        expect(410, acme.post("/v1/sandboxes/" + parent + "/branch", Map.of("tag", "x", "wait", false)));
        expect(410, acme.post("/v1/sandboxes/" + parent + "/branch", Map.of("tag", "x", "wait", true)));
        expect(400, acme.outsideTheContract().post("/v1/sandboxes/" + parent + "/branch", Map.of("tag", "x", "wait_for_copy", true)));
        expect(403, acmeUser.post("/v1/sandboxes/" + parent + "/branch", Map.of("tag", "x")));

        expect(204, acmeUser.post("/v1/sandboxes/" + parent + "/touch", ""));
        expect(404, acme.post("/v1/sandboxes/sb-nope/touch", ""));
        expect(404, globex.post("/v1/sandboxes/" + parent + "/touch", ""));

        Api.Response flat = acme.post("/v1/snapshots/br/compact", Map.of("to", "br-flat"));
        expect(201, flat);
        assertFalse(flat.body().has("parent_tag"), "a compacted snapshot stands alone");
        expect(409, acme.post("/v1/snapshots/br/compact", Map.of("to", "br-flat")));
        expect(400, acme.post("/v1/snapshots/br/compact", Map.of("to", "br")));
        expect(404, acme.post("/v1/snapshots/nope/compact", Map.of("to", "x")));
        String fromFlat = fork(acme, "br-flat", 1).get(0);
        assertEquals("from-parent\n", Api.sh(acme, fromFlat, "cat /work/branch.txt"));

        Api.Response blocked = acme.delete("/v1/snapshots/origin");
        expect(409, blocked);
        assertTrue(blocked.error().contains("[br]"), blocked.error());
        expect(400, acme.delete("/v1/snapshots/origin?cascade=true&force=true"));
        expect(400, acme.outsideTheContract().delete("/v1/snapshots/origin?cascade=maybe"));
        JsonNode originInfo = acme.get("/v1/snapshots/origin/info").body();
        assertEquals("[\"br\"]", originInfo.get("dependents").toString());
        assertEquals("[\"origin\"]", acme.get("/v1/snapshots/br/info").body().get("ancestors").toString());
        expect(204, acme.delete("/v1/snapshots/origin?cascade=true"));
        expect(404, acme.get("/v1/snapshots/br/info"));
        expect(404, acme.delete("/v1/snapshots/origin"));
        assertEquals("from-parent\n", Api.sh(acme, child, "cat /work/branch.txt"), "forked children outlive their tag");

        build("root", "true");
        String rootChild = fork(acme, "root", 1).get(0);
        expect(201, acme.post("/v1/sandboxes/" + rootChild + "/branch", Map.of("tag", "leaf")));
        expect(204, acme.delete("/v1/snapshots/root?force=true"));
        JsonNode leaf = find(acme.get("/v1/snapshots").body(), "leaf");
        assertTrue(leaf.get("bootable").asBoolean(), "an orphan keeps its own files: " + leaf);
        assertNotEquals(0, fork(acme, "leaf", 1).size());
    }

    @Test
    void aForkAskedForItsProgressCountsItsChildrenOn200ThenGivesThemAndAnUnknownTagIsStillA404() throws Exception {
        build("progress", "echo p > /work/p");
        HttpResponse<java.io.InputStream> r = acme.stream("POST", "/v1/sandboxes", Map.of("snapshot_tag", "progress", "n", 3),
                "Accept", "text/event-stream");
        assertEquals(200, r.statusCode());
        assertTrue(r.headers().firstValue("Content-Type").orElse("").startsWith("text/event-stream"));
        List<Integer> counted = new ArrayList<>();
        JsonNode children;
        try (ServerSentEvents events = new ServerSentEvents(r.body())) {
            ServerSentEvents.Event e;
            while ((e = events.nextEvent()).name().equals("progress")) {
                assertEquals("children", e.data().get("what").asText());
                assertEquals(3, e.data().get("of").asInt());
                counted.add(e.data().get("done").asInt());
            }
            assertEquals("result", e.name(), String.valueOf(e.data()));
            children = e.data();
        }
        assertEquals(List.of(0, 1, 2, 3), counted, "the start, then each child once, in order");
        assertEquals(3, children.size());
        for (JsonNode child : children) {
            assertEquals("progress", child.get("snapshot_tag").asText());
            expect(204, acme.delete("/v1/sandboxes/" + child.get("id").asText()));
        }
        AssertionError unknown = assertThrows(AssertionError.class, () -> acme.stream("POST",
                "/v1/sandboxes", Map.of("snapshot_tag", "never-built", "n", 2), "Accept", "text/event-stream"));
        assertTrue(unknown.getMessage().contains("answered 404"), unknown.getMessage());
        expect(204, acme.delete("/v1/snapshots/progress"));
    }

    static JsonNode find(JsonNode snapshots, String tag) {
        for (JsonNode s : snapshots) {
            if (s.get("tag").asText().equals(tag)) {
                return s;
            }
        }
        throw new AssertionError("no snapshot " + tag + " in " + snapshots);
    }
}
