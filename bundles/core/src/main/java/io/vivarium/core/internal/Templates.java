package io.vivarium.core.internal;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import java.util.regex.Pattern;

import io.vivarium.api.ApiException;
import io.vivarium.api.Caller;
import io.vivarium.api.CreateSandboxRequest;
import io.vivarium.api.Progress;
import io.vivarium.api.TemplateInfo;
import io.vivarium.api.TemplateRequest;
import io.vivarium.api.TemplateService;
import io.vivarium.api.VolumeMount;
import io.vivarium.api.spi.RootImage;
import io.vivarium.api.spi.RootImages;
import io.vivarium.api.state.StaleRevisionException;
import io.vivarium.api.state.StateStore;
import io.vivarium.api.state.Stored;
import io.vivarium.api.state.Transaction;

/**
 * The operator's templates (docs/templates.md): records in the state store, each with the build of
 * its image by the {@link RootImages} installed (a job: {@link TemplateInfo#BUILDING} until the image
 * is unpacked, then {@link TemplateInfo#READY} or {@link TemplateInfo#FAILED}), and what a create
 * from one becomes ({@link #use}). A build a stopped daemon left under way is started again at start
 * (the pull leaves nothing half-made, so it begins anew).
 */
final class Templates {
    private static final System.Logger LOG = System.getLogger(Templates.class.getName());
    /** The create fields a template may let clients set. */
    static final Set<String> CLIENT_FIELDS = Set.of("memory_limit_mib", "pids_limit", "disk_limit_mib", "vcpus", "network",
            "idle", "volumes");
    /** How long a create waits for its build before it answers 202: an image already unpacked here is ready by then. */
    private static final Duration READY_WITHIN = Duration.ofSeconds(2);
    private static final Pattern USER = Pattern.compile("([a-z_][a-z0-9_.-]{0,31}|[0-9]{1,9})(:([a-z_][a-z0-9_.-]{0,31}|[0-9]{1,9}))?");
    private static final int MAX_ENV = 256;

    /** What a create from a template becomes: the request with the template's values, and the root it runs on. */
    record Use(CreateSandboxRequest request, TemplateRoot root) {
    }

    /** Checks a template's sandbox request against its backend, as a create of it would be. */
    @FunctionalInterface
    interface SandboxCheck {
        void check(CreateSandboxRequest request);
    }

    private final Sandboxes sandboxes;
    private final Supplier<Optional<RootImages>> images;
    private final SandboxCheck check;
    private final ExecutorService builds = Executors.newFixedThreadPool(2, r -> {
        Thread t = new Thread(r, "vivarium-template-build");
        t.setDaemon(true);
        return t;
    });
    /** Held while a build's image is checked and recorded ready, and while an unused image is removed. */
    private final Object claims = new Object();
    /** The builds under way, by template name, with their progress. */
    private final Map<String, TemplateInfo.Build> building = new ConcurrentHashMap<>();

    Templates(Sandboxes sandboxes, Supplier<Optional<RootImages>> images, SandboxCheck check) {
        this.sandboxes = sandboxes;
        this.images = images;
        this.check = check;
    }

    /**
     * Starts again the builds a stopped daemon left under way, once an images bundle is there (at
     * start, or when one arrives: {@link #imagesArrived}).
     */
    void start() {
        resume();
    }

    /** An images bundle was bound: builds that waited for one go on. */
    void imagesArrived() {
        resume();
    }

    private synchronized void resume() {
        if (images.get().isEmpty() || builds.isShutdown()) {
            return;
        }
        for (Stored<TemplateRecord> t : state().all(StateCollections.TEMPLATES)) {
            if (t.body().state().equals(TemplateInfo.BUILDING) && !building.containsKey(t.key())) {
                LOG.log(System.Logger.Level.INFO, "template " + t.key() + "'s build was under way when the daemon (or its "
                        + "images bundle) stopped; it starts again");
                submit(t.body());
            }
        }
    }

    void stop() {
        builds.shutdownNow();
    }

    TemplateInfo create(Caller caller, TemplateRequest request) {
        TemplateRequest r = checked(request);
        RootImages pulling = rootImages();
        pulling.checkReference(r.image());
        pulling.unavailable().ifPresent(why -> {
            throw ApiException.unavailable("templates cannot be built on this host: " + why, 60);
        });
        TemplateRecord record = new TemplateRecord(r.name(), r, Instant.now().getEpochSecond(), TemplateInfo.BUILDING,
                new TemplateInfo.Build(UUID.randomUUID().toString(), TemplateInfo.BUILDING, 0, 0, 0, 0, null), null, null);
        try {
            state().commit(new Transaction().put(StateCollections.TEMPLATES, r.name(), record, Stored.ABSENT));
        } catch (StaleRevisionException exists) {
            throw ApiException.conflict("template " + r.name() + " exists; choose another name or DELETE /v1/templates/" + r.name());
        } catch (IOException e) {
            throw ApiException.unavailable("cannot write the record of template " + r.name() + ": " + e.getMessage(), 5);
        }
        CountDownLatch finished = submit(record);
        try {
            finished.await(READY_WITHIN.toMillis(), TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        return get(caller, r.name());
    }

    List<TemplateInfo> list(Caller caller) {
        return state().all(StateCollections.TEMPLATES).stream().map(Stored::body)
                .sorted(Comparator.comparing(TemplateRecord::name)).map(this::info).toList();
    }

    TemplateInfo get(Caller caller, String name) {
        return info(find(name).body());
    }

    void delete(Caller caller, String name) {
        Stored<TemplateRecord> t = find(name);
        List<String> users = sandboxes.all().stream().map(Sandbox::record).filter(r -> name.equals(r.template()))
                .map(SandboxRecord::id).sorted().toList();
        if (!users.isEmpty()) {
            throw ApiException.conflict("template " + name + " is used by sandbox(es) " + String.join(", ", users)
                    + "; delete them first");
        }
        List<String> snapshotsOfIt = state().all(StateCollections.SNAPSHOTS).stream().map(Stored::body)
                .filter(r -> name.equals(r.template())).map(r -> r.tenant() + "/" + r.tag()).sorted().toList();
        if (!snapshotsOfIt.isEmpty()) {
            throw ApiException.conflict("template " + name + " is used by snapshot(s) " + String.join(", ", snapshotsOfIt)
                    + " (tenant/tag), whose children run on its image; their tenants delete them first");
        }
        try {
            state().commit(new Transaction().delete(StateCollections.TEMPLATES, name, t.revision()));
        } catch (StaleRevisionException changed) {
            throw ApiException.conflict("template " + name + " changed meanwhile (its build ended); try again");
        } catch (IOException e) {
            throw ApiException.unavailable("cannot delete the record of template " + name + ": " + e.getMessage(), 5);
        }
        if (t.body().image() != null) {
            removeUnused(t.body().image().digest());
        }
    }

    /** What a create from the template {@code asked} names becomes; 404 if there is none, 409 unless ready, 403 for a field it does not let clients set. */
    Use use(CreateSandboxRequest asked) {
        Stored<TemplateRecord> stored = state().get(StateCollections.TEMPLATES, asked.template()).orElseThrow(() ->
                ApiException.notFound("template " + asked.template() + " does not exist (GET /v1/templates lists them)"));
        TemplateRecord t = stored.body();
        if (!t.state().equals(TemplateInfo.READY)) {
            throw ApiException.conflict("template " + t.name() + " is " + t.state() + (t.build().error() == null ? ""
                    : " (" + t.build().error() + ")") + "; a sandbox can be made from it once GET /v1/templates/" + t.name()
                    + " says ready");
        }
        if (!Files.isDirectory(Path.of(t.root().rootfs()))) {
            throw ApiException.conflict("template " + t.name() + "'s image is no longer unpacked on this host ("
                    + t.root().rootfs() + "); the operator makes the template again (DELETE, then POST /v1/templates)");
        }
        TemplateRequest r = t.request();
        Set<String> may = Set.copyOf(r.clientMaySet());
        refuse("backend", asked.backend() != null, Set.of(), t.name());
        refuse("image", asked.image() != null, Set.of(), t.name());
        refuse("memory_limit_mib", asked.memoryLimitMib() != null, may, t.name());
        refuse("pids_limit", asked.pidsLimit() != null, may, t.name());
        refuse("disk_limit_mib", asked.diskLimitMib() != null, may, t.name());
        refuse("vcpus", asked.vcpus() != null, may, t.name());
        refuse("network", asked.network() != null, may, t.name());
        refuse("idle", asked.idle() != null, may, t.name());
        refuse("volumes", !asked.volumes().isEmpty(), may, t.name());
        List<VolumeMount> volumes = new ArrayList<>(r.volumes());
        volumes.addAll(asked.volumes());
        for (VolumeMount v : volumes) {
            requireMountPoint(t, v.mountPath());
        }
        CreateSandboxRequest request = new CreateSandboxRequest(r.backend(),
                or(asked.memoryLimitMib(), r.memoryLimitMib()), or(asked.vcpus(), r.vcpus()), null,
                or(asked.pidsLimit(), r.pidsLimit()), or(asked.diskLimitMib(), r.diskLimitMib()), asked.nodeId(),
                or(asked.network(), r.network()), volumes, or(asked.idle(), r.idle()), t.name());
        return new Use(request, t.root());
    }

    /**
     * A volume of a sandbox on an image's root mounts under {@code /work} or {@code /tmp} (its own), or
     * on a directory the image has: the image's root is read-only, so no mount point can be made in it.
     */
    private static void requireMountPoint(TemplateRecord t, String mountPath) {
        if (mountPath == null || !mountPath.startsWith("/") || mountPath.startsWith("/work/") || mountPath.startsWith("/tmp/")) {
            return; // VolumeRequests refuses a missing or relative one
        }
        Path at = Path.of(t.root().rootfs());
        for (Path part : Path.of("/").relativize(Path.of(mountPath))) {
            at = at.resolve(part);
            if (!Files.isDirectory(at, LinkOption.NOFOLLOW_LINKS)) {
                throw ApiException.badRequest("volume mount_path " + mountPath + " is not a directory of template " + t.name()
                        + "'s image, whose root is read-only: mount it under /work or /tmp, or at a directory the image has");
            }
        }
    }

    private static void refuse(String field, boolean set, Set<String> may, String template) {
        if (set && !may.contains(field)) {
            throw ApiException.forbidden("template " + template + " does not let clients set " + field + (may.isEmpty()
                    ? " (it lets them set nothing beside it)" : " (it lets them set " + String.join(", ", new java.util.TreeSet<>(may))
                    + ")") + "; leave it out, or ask the operator for a template that does");
        }
    }

    private static <T> T or(T asked, T template) {
        return asked != null ? asked : template;
    }

    // ---- builds -----------------------------------------------------------------------------

    private CountDownLatch submit(TemplateRecord record) {
        CountDownLatch finished = new CountDownLatch(1);
        String id = record.build().id();
        building.put(record.name(), record.build());
        builds.execute(() -> {
            try {
                build(record);
            } finally {
                // a build of a template deleted and made again meanwhile has an entry of its own, which stays
                building.computeIfPresent(record.name(), (k, b) -> b.id().equals(id) ? null : b);
                finished.countDown();
            }
        });
        return finished;
    }

    /**
     * Pulls the template's image and records it ready, or failed with why. A build without an images
     * bundle (uninstalled meanwhile) or of a stopping daemon is left building: it goes on when one is
     * there again, or at the next start.
     */
    private void build(TemplateRecord record) {
        String name = record.name();
        TemplateInfo.Build started = record.build();
        TemplateRecord ended;
        try {
            Optional<RootImages> pulling = images.get();
            if (pulling.isEmpty()) {
                LOG.log(System.Logger.Level.WARNING, "template " + name + "'s build waits for an images bundle (images-oci)");
                return;
            }
            ended = built(record, pulling.get());
        } catch (IOException | RuntimeException | LinkageError | OutOfMemoryError e) {
            // a LinkageError: the images bundle was updated under the build, whose old classes are gone
            if (builds.isShutdown()) {
                return;
            }
            TemplateInfo.Build build = progress(name, started);
            String why = e instanceof ApiException a ? a.getMessage() + " (" + a.status() + ")" : String.valueOf(e.getMessage());
            LOG.log(System.Logger.Level.WARNING, "template " + name + "'s build failed: " + why);
            ended = new TemplateRecord(name, record.request(), record.createdAtUnix(), TemplateInfo.FAILED,
                    new TemplateInfo.Build(started.id(), TemplateInfo.FAILED, build.layersDone(), build.layers(),
                            build.bytesDone(), build.bytes(), why), null, null);
        }
        finish(ended);
    }

    /**
     * The record of a template whose image {@code pulling} gave and which is still there: an image
     * another template's delete removed between its pull and this check is pulled once more.
     */
    private TemplateRecord built(TemplateRecord record, RootImages pulling) throws IOException {
        TemplateInfo.Build started = record.build();
        for (int attempt = 1;; attempt++) {
            RootImage image = pulling.pull(record.request().image(), progressOf(record.name(), started));
            TemplateRoot root;
            try {
                root = rootOf(record.request(), image);
            } catch (IOException | RuntimeException e) {
                removeUnused(image.digest());
                throw e;
            }
            TemplateInfo.Build build = progress(record.name(), started);
            TemplateRecord ready = new TemplateRecord(record.name(), record.request(), record.createdAtUnix(), TemplateInfo.READY,
                    new TemplateInfo.Build(started.id(), TemplateInfo.READY, build.layers(), build.layers(), build.bytes(),
                            build.bytes(), null),
                    new TemplateInfo.ImageFacts(image.digest(), image.env(), image.workdir(), image.user(), root.uid(), root.gid(),
                            image.entrypoint(), image.cmd()), root);
            synchronized (claims) {
                if (Files.isDirectory(image.rootfs())) {
                    return ready; // recorded under the same lock by finish, so that no removal comes between
                }
            }
            if (attempt == 2) {
                throw new IOException("its image " + image.digest() + " was removed twice as it was built; make the template "
                        + "again");
            }
        }
    }

    /** Records how a build ended, unless the template was deleted meanwhile (its image then goes if nothing else uses it). */
    private void finish(TemplateRecord ended) {
        String name = ended.name();
        synchronized (claims) {
            try {
                Optional<Stored<TemplateRecord>> now = state().get(StateCollections.TEMPLATES, name);
                if (now.isPresent() && now.get().body().build().id().equals(ended.build().id())) {
                    state().commit(new Transaction().put(StateCollections.TEMPLATES, name, ended, now.get().revision()));
                    return;
                }
            } catch (StaleRevisionException deletedMeanwhile) {
                // the template was deleted (or made again) between the read and the write: as if it had been before
            } catch (IOException e) {
                LOG.log(System.Logger.Level.WARNING, "cannot record the end of template " + name + "'s build (it is built "
                        + "again at the next start): " + e.getMessage());
                return;
            }
            if (ended.image() != null) {
                removeUnused(ended.image().digest());
            }
        }
    }

    /** The progress of {@code started}'s build as told so far. */
    private TemplateInfo.Build progress(String name, TemplateInfo.Build started) {
        TemplateInfo.Build b = building.get(name);
        return b != null && b.id().equals(started.id()) ? b : started;
    }

    private Progress progressOf(String name, TemplateInfo.Build started) {
        return (what, doneSteps, of) -> building.computeIfPresent(name, (k, b) -> !b.id().equals(started.id()) ? b
                : what.equals(RootImages.LAYERS)
                        ? new TemplateInfo.Build(b.id(), b.state(), doneSteps, of, b.bytesDone(), b.bytes(), null)
                        : new TemplateInfo.Build(b.id(), b.state(), b.layersDone(), b.layers(), (long) doneSteps << 20,
                                (long) of << 20, null));
    }

    /** The root a template's sandboxes run on: its image, with the template's env, workdir and user over the image's. */
    static TemplateRoot rootOf(TemplateRequest t, RootImage image) throws IOException {
        Map<String, String> env = new LinkedHashMap<>(image.env());
        env.putAll(t.env());
        int[] ids = t.user() == null ? new int[] {image.uid(), image.gid()} : ImageUsers.resolve(image.rootfs(), t.user());
        return new TemplateRoot(image.digest(), image.rootfs().toString(), env, t.workdir() != null ? t.workdir() : image.workdir(),
                ids[0], ids[1]);
    }

    /** Removes the unpacked image of {@code digest} unless a ready template names it (under the lock its builds record under). */
    private void removeUnused(String digest) {
        synchronized (claims) {
            boolean used = state().all(StateCollections.TEMPLATES).stream().map(Stored::body)
                    .anyMatch(t -> t.image() != null && t.image().digest().equals(digest));
            if (!used) {
                images.get().ifPresent(i -> i.remove(digest));
            }
        }
    }

    // ---- records and checks -----------------------------------------------------------------

    private TemplateRequest checked(TemplateRequest r) {
        if (r == null) {
            throw ApiException.badRequest("a body is required: {\"name\": \"py\", \"image\": \"docker://host/name:tag\", ...}");
        }
        if (r.name() == null || !TemplateService.NAME.matcher(r.name()).matches()) {
            throw ApiException.badRequest("name must be 1 to 63 lower-case letters, digits, '.', '_' or '-', starting with a "
                    + "letter or digit, got " + (r.name() == null ? "none" : "\"" + r.name() + "\""));
        }
        if (r.image() == null || r.image().isBlank()) {
            throw ApiException.badRequest("image is required: an OCI image, docker://host/name:tag, oci:/path/to/layout:tag "
                    + "or docker-archive:/path/image.tar");
        }
        for (String field : r.clientMaySet()) {
            if (!CLIENT_FIELDS.contains(field)) {
                throw ApiException.badRequest("client_may_set names \"" + field + "\", which is not a field clients may be let "
                        + "set; they are: " + String.join(", ", new java.util.TreeSet<>(CLIENT_FIELDS)));
            }
        }
        if (r.env().size() > MAX_ENV) {
            throw ApiException.badRequest("env has " + r.env().size() + " variables; at most " + MAX_ENV);
        }
        r.env().forEach((k, v) -> {
            if (k.isEmpty() || k.indexOf('=') >= 0 || k.indexOf('\0') >= 0 || v.indexOf('\0') >= 0) {
                throw ApiException.badRequest("env " + k + " is invalid: a name without '=' or NUL and a string value");
            }
        });
        if (r.workdir() != null && (!r.workdir().startsWith("/") || r.workdir().indexOf('\0') >= 0 || r.workdir().length() > 4096)) {
            throw ApiException.badRequest("workdir must be an absolute path, got \"" + r.workdir() + "\"");
        }
        if (r.user() != null && !USER.matcher(r.user()).matches()) {
            throw ApiException.badRequest("user must be a name or uid, with an optional :group or :gid (e.g. app, 1000, "
                    + "1000:1000), got \"" + r.user() + "\"");
        }
        check.check(new CreateSandboxRequest(r.backend(), r.memoryLimitMib(), r.vcpus(), null, r.pidsLimit(), r.diskLimitMib(),
                null, r.network(), r.volumes(), r.idle(), r.name()));
        return r;
    }

    private Stored<TemplateRecord> find(String name) {
        return state().get(StateCollections.TEMPLATES, name).orElseThrow(() ->
                ApiException.notFound("template " + name + " does not exist (GET /v1/templates lists them)"));
    }

    private TemplateInfo info(TemplateRecord t) {
        TemplateInfo.Build build = t.state().equals(TemplateInfo.BUILDING) ? progress(t.name(), t.build()) : t.build();
        return new TemplateInfo(t.name(), t.state(), t.request(), build, t.image(), t.createdAtUnix());
    }

    private RootImages rootImages() {
        return images.get().orElseThrow(() -> ApiException.unavailable("no images bundle is installed to build templates "
                + "with: enable the images-oci feature (POST /v1/features/images-oci/enable)", 60));
    }

    private StateStore state() {
        return sandboxes.state();
    }
}
