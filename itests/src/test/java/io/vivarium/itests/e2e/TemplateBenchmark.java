package io.vivarium.itests.e2e;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import io.vivarium.itests.bench.Bench;
import io.vivarium.itests.bench.BenchReport;
import io.vivarium.itests.bench.Goal;
import io.vivarium.itests.bench.Stats;
import io.vivarium.itests.bench.Table;
import io.vivarium.testkit.Bounded;
import io.vivarium.testkit.LocalRegistry;
import io.vivarium.testkit.OciTestImages;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * Side by side, in one run (issue 27): (a) procbox creates from a cached template against creates of
 * the built-in root with the same memory limit (so that neither is served by procbox's pool of
 * default sandboxes: both launch at create), alternating, each deleted outside the timed call;
 * (b) building a template of a 100 MiB image served by Debian's docker-registry on 127.0.0.1, from
 * the POST until GET says ready, against what a person would run by hand: {@code skopeo copy} of
 * the image into a layout and {@code umoci unpack} of it, alternating; the template is deleted (its
 * unpacked image with it) between rounds, so that each build pulls again; (c) where QEMU runs, the
 * same as (a) for VMs: creates from the template on qemu (the image's root a disk the guest switches
 * to) against creates of the default guest image, each pair after one untimed create of each (the
 * first makes the image's disk).
 */
@ExtendWith(Bench.class)
class TemplateBenchmark {
    static final Goal CREATE_RATIO = Goal.atMost(
            "procbox create from a cached template p50 / create of the built-in root p50 (same memory limit)", 1.1, "×", 27);
    static final Goal QEMU_CREATE_RATIO = Goal.atMost(
            "qemu create from a cached template p50 / create of the default guest image p50", 1.1, "×", 27);
    static final Goal BUILD_RATIO = Goal.atMost(
            "template build of a 100 MiB image from a local registry / skopeo copy + umoci unpack by hand, median", 2, "×", 27);

    @RegisterExtension
    static final Daemons daemons = new Daemons();

    static final int CREATE_PAIRS = 20;
    static final int VM_CREATE_PAIRS = 8;
    static final int BUILD_ROUNDS = 3;
    static final int BIG_MIB = 100;

    @TempDir
    Path dir;

    @Test
    void templatesAgainstTheBuiltInRootAndAgainstPullingByHand(BenchReport report) throws Exception {
        Assumptions.assumeTrue(Host.canRunProcbox(), Host.PROCBOX_REASON);
        Assumptions.assumeTrue(OciTestImages.missingTools() == null, OciTestImages.missingTools());
        Assumptions.assumeTrue(LocalRegistry.missing() == null, LocalRegistry.missing());
        Path big = randomFile(dir.resolve("big.bin"), BIG_MIB);
        try (LocalRegistry registry = LocalRegistry.start(dir.resolve("registry"))) {
            OciTestImages.copy(OciTestImages.layout(dir.resolve("small")), registry.reference("bench/small:1"));
            OciTestImages.copy(OciTestImages.layout(dir.resolve("big"), List.of(big)), registry.reference("bench/big:1"));
            Daemon daemon = daemons.start(dir.resolve("state"), List.of("--features",
                    "core,api-v1,procbox,qemu,images-oci,fingerprint-sha256,storage-reflink"),
                    List.of("-Dvivarium.images.insecure.registries=" + registry.host()));
            Api api = new Api(daemon.baseUrl(), daemon.adminToken());

            built(api, "small", "procbox", registry.reference("bench/small:1"));
            List<List<Double>> procbox = alternating(api, CREATE_PAIRS, Map.of("template", "small"),
                    Map.of("backend", "procbox", "memory_limit_mib", 256));
            List<Double> fromTemplate = procbox.get(0);
            List<Double> builtIn = procbox.get(1);
            report.add(new Table("procbox create, 256 MiB memory limit", "n", "p50 ms", "p99 ms")
                    .latency("POST /v1/sandboxes {\"template\": \"small\"} (busybox image, cached)", fromTemplate)
                    .latency("POST /v1/sandboxes {\"memory_limit_mib\": 256} (the host's /usr, read-only)", builtIn));
            report.check(CREATE_RATIO, Stats.p50(fromTemplate) / Stats.p50(builtIn));

            String noQemu = Host.qemuMissing("default");
            if (noQemu == null) {
                built(api, "small-vm", "qemu", registry.reference("bench/small:1"));
                List<List<Double>> qemu = alternating(api, VM_CREATE_PAIRS, Map.of("template", "small-vm"),
                        Map.of("backend", "qemu"));
                report.add(new Table("qemu create, the default 256 MiB guest", "n", "p50 ms", "p99 ms")
                        .latency("POST /v1/sandboxes {\"template\": \"small-vm\"} (busybox image's root as a disk, cached)",
                                qemu.get(0))
                        .latency("POST /v1/sandboxes {\"backend\": \"qemu\"} (the default guest image)", qemu.get(1)));
                report.check(QEMU_CREATE_RATIO, Stats.p50(qemu.get(0)) / Stats.p50(qemu.get(1)));
            } else {
                report.notRun(QEMU_CREATE_RATIO, noQemu);
            }

            List<Double> building = new ArrayList<>();
            List<Double> byHand = new ArrayList<>();
            for (int round = 0; round < BUILD_ROUNDS; round++) {
                if (round % 2 == 0) {
                    building.add(build(api, registry));
                    byHand.add(byHand(registry, round));
                } else {
                    byHand.add(byHand(registry, round));
                    building.add(build(api, registry));
                }
            }
            report.add(new Table("a 100 MiB image (random bytes, one layer) from the local registry", "n", "median ms", "max ms")
                    .row("POST /v1/templates until GET says ready (inspect, copy, every layer checked, unpack, sync)",
                            building.size(), Stats.p50(building), Stats.pct(building, 100))
                    .row("by hand: skopeo copy docker://... oci:DIR, then umoci unpack", byHand.size(), Stats.p50(byHand),
                            Stats.pct(byHand, 100)));
            report.check(BUILD_RATIO, Stats.p50(building) / Stats.p50(byHand));
        }
    }

    /** {@code mib} MiB of random bytes, which no layer compression shrinks. */
    private static Path randomFile(Path file, int mib) throws IOException {
        java.util.Random random = new java.util.Random(27);
        byte[] chunk = new byte[1 << 20];
        try (var out = Files.newOutputStream(file)) {
            for (int i = 0; i < mib; i++) {
                random.nextBytes(chunk);
                out.write(chunk);
            }
        }
        return file;
    }

    /**
     * {@code pairs} creates of {@code a} and of {@code b}, alternating which goes first, after one
     * untimed pair (a warm-up); each is deleted outside the timed call.
     */
    private static List<List<Double>> alternating(Api api, int pairs, Map<String, Object> a, Map<String, Object> b)
            throws Exception {
        List<Double> as = new ArrayList<>();
        List<Double> bs = new ArrayList<>();
        for (int pair = 0; pair <= pairs; pair++) {
            double ta = pair % 2 == 0 ? created(api, a) : 0;
            double tb = created(api, b);
            if (pair % 2 == 1) {
                ta = created(api, a);
            }
            if (pair > 0) {
                as.add(ta);
                bs.add(tb);
            }
        }
        return List.of(as, bs);
    }

    private static double created(Api api, Map<String, Object> body) throws Exception {
        long t0 = System.nanoTime();
        String id = Api.expect(201, api.post("/v1/sandboxes", body)).get("id").asText();
        double ms = Stats.millisSince(t0);
        Api.expect(204, api.delete("/v1/sandboxes/" + id));
        return ms;
    }

    private static void built(Api api, String name, String backend, String image) throws Exception {
        Api.Response r = api.post("/v1/templates", Map.of("name", name, "backend", backend, "image", image,
                "client_may_set", List.of("memory_limit_mib")));
        if (r.status() != 201 && r.status() != 202) {
            throw new AssertionError("the template was not made: " + r.status() + " " + r.raw().body());
        }
        Bounded.until(Duration.ofMinutes(5), "template " + name + " is built", () -> {
            try {
                return Api.expect(200, api.get("/v1/templates/" + name)).get("state").asText().equals("ready");
            } catch (Exception e) {
                return false;
            }
        });
    }

    /** One build of the big image, timed to the first GET that says ready; the template is then deleted, its image with it. */
    private static double build(Api api, LocalRegistry registry) throws Exception {
        long t0 = System.nanoTime();
        built(api, "big", "procbox", registry.reference("bench/big:1"));
        double ms = Stats.millisSince(t0);
        Api.expect(204, api.delete("/v1/templates/big"));
        return ms;
    }

    private double byHand(LocalRegistry registry, int round) throws IOException {
        Path layout = dir.resolve("by-hand-" + round);
        long t0 = System.nanoTime();
        OciTestImages.copy(registry.reference("bench/big:1"), "oci:" + layout + ":image");
        OciTestImages.umoci("unpack", "--image", layout + ":image", dir.resolve("by-hand-bundle-" + round).toString());
        return Stats.millisSince(t0);
    }
}
