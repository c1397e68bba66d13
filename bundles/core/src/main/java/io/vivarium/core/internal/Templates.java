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

import io.vivarium.api.ApiException;
import io.vivarium.api.Caller;
import io.vivarium.api.CreateSandboxRequest;
import io.vivarium.api.Progress;
import io.vivarium.api.SandboxInfo;
import io.vivarium.api.TemplateInfo;
import io.vivarium.api.TemplateRequest;
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
    /** How long a create waits for its build before it answers 202: an image already unpacked here is ready by then. */
    private static final Duration READY_WITHIN = Duration.ofSeconds(2);

    /**
     * What a create from a template becomes: the request with the template's values, and the root it runs on.
     *
     * @param fromSetup whether the sandbox is a child of the template's setup snapshot
     *        ({@link #createFromSetup}), {@code request} then what the child is made as
     */
    record Use(CreateSandboxRequest request, TemplateRoot root, boolean fromSetup) {
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
    private volatile TemplateSetups setups;

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

    /** What templates' setups run on while the snapshot component runs (null: it does not); builds that waited for it go on. */
    void setups(TemplateSetups running) {
        setups = running;
        if (running != null) {
            resume();
        }
    }

    private synchronized void resume() {
        if (images.get().isEmpty() || builds.isShutdown()) {
            return;
        }
        for (Stored<TemplateRecord> t : state().all(StateCollections.TEMPLATES)) {
            if (t.body().state().equals(TemplateInfo.BUILDING) && !building.containsKey(t.key())
                    && (t.body().request().setup() == null || setups != null)) {
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
                .filter(r -> name.equals(r.template()) && !r.tenant().equals(SetupSnapshots.TENANT))
                .map(r -> r.tenant() + "/" + r.tag()).sorted().toList();
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
        if (t.body().request().setup() != null) {
            removeSetup(name);
        }
        if (t.body().image() != null) {
            removeUnused(t.body().image().digest());
        }
    }

    /** Removes a deleted template's setup snapshot; one left (no snapshot component now) goes at the next build of the name. */
    private void removeSetup(String name) {
        TemplateSetups running = setups;
        if (running == null) {
            LOG.log(System.Logger.Level.WARNING, "template " + name + "'s setup snapshot stays until a template of that name "
                    + "is built again: the snapshot component is not running");
            return;
        }
        running.remove(name);
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
        if (r.setup() != null) {
            // its client_may_set is empty: every field above was refused
            return new Use(new CreateSandboxRequest(r.backend(), r.memoryLimitMib(), null, null, r.pidsLimit(),
                    r.diskLimitMib(), asked.nodeId(), r.network(), List.of(), r.idle(), t.name()), t.root(), true);
        }
        List<VolumeMount> volumes = new ArrayList<>(r.volumes());
        volumes.addAll(asked.volumes());
        for (VolumeMount v : volumes) {
            requireMountPoint(t, v.mountPath());
        }
        CreateSandboxRequest request = new CreateSandboxRequest(r.backend(),
                or(asked.memoryLimitMib(), r.memoryLimitMib()), or(asked.vcpus(), r.vcpus()), null,
                or(asked.pidsLimit(), r.pidsLimit()), or(asked.diskLimitMib(), r.diskLimitMib()), asked.nodeId(),
                or(asked.network(), r.network()), volumes, or(asked.idle(), r.idle()), t.name());
        return new Use(request, t.root(), false);
    }

    /** A sandbox of a template with a setup ({@code use.fromSetup()}): a child of its setup snapshot. */
    SandboxInfo createFromSetup(Caller caller, Use use) {
        TemplateSetups running = setups;
        if (running == null) {
            throw ApiException.unavailable("template " + use.request().template() + "'s sandboxes are forked from its setup "
                    + "snapshot, and the snapshot component is not running now", 5);
        }
        return running.create(caller, use.request().template(), use.request());
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
            if (record.request().setup() != null && setups == null) {
                LOG.log(System.Logger.Level.WARNING, "template " + name + "'s build waits for the snapshot component its "
                        + "setup runs on");
                return;
            }
            ended = built(record, pulling.get());
            if (record.request().setup() != null) {
                setUp(ended);
            }
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

    /**
     * Runs the setup of the template {@code ready} records (pulled, not yet recorded ready) once, in a
     * sandbox of it, and keeps its snapshot; its image goes again if this fails.
     */
    private void setUp(TemplateRecord ready) throws IOException {
        TemplateRequest r = ready.request();
        TemplateSetups running = setups;
        try {
            if (running == null) {
                throw new IOException("the snapshot component its setup runs on stopped during the build");
            }
            running.build(ready.name(), new CreateSandboxRequest(r.backend(), r.memoryLimitMib(), r.vcpus(), null,
                    r.pidsLimit(), r.diskLimitMib(), null, r.network(), List.of(), null, ready.name()), ready.root(), r.setup());
        } catch (IOException | RuntimeException e) {
            removeUnused(ready.image().digest());
            throw e;
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
                    .anyMatch(t -> t.image() != null && t.image().digest().equals(digest))
                    || sandboxes.all().stream().map(Sandbox::record)
                            .anyMatch(s -> s.root() != null && s.root().digest().equals(digest));
            if (!used) {
                images.get().ifPresent(i -> i.remove(digest));
            }
        }
    }

    // ---- records and checks -----------------------------------------------------------------

    private TemplateRequest checked(TemplateRequest r) {
        TemplateRequests.check(r);
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
