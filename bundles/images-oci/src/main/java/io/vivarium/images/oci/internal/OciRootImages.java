package io.vivarium.images.oci.internal;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import org.osgi.framework.BundleContext;
import org.osgi.service.component.annotations.Activate;
import org.osgi.service.component.annotations.Component;
import org.osgi.service.component.annotations.Deactivate;
import org.osgi.service.metatype.annotations.Designate;

import io.vivarium.api.ApiException;
import io.vivarium.api.Progress;
import io.vivarium.api.spi.RootImage;
import io.vivarium.api.spi.RootImages;
import io.vivarium.common.exec.HostCommand;

/**
 * Root images from OCI images, without a container engine (docs/templates.md): skopeo copies the
 * image into a staged OCI layout (verifying each blob's digest), every layer is checked
 * ({@link LayerCheck}), umoci unpacks it, and the result is published by digest
 * ({@link UnpackedImages}). One pull per digest at a time; a second waits and finds it done.
 */
@Component(service = RootImages.class, configurationPid = OciImagesConfig.PID)
@Designate(ocd = OciImagesConfig.class)
public final class OciRootImages implements RootImages {
    private static final System.Logger LOG = System.getLogger(OciRootImages.class.getName());
    private static final long BYTES_PER_MIB = 1 << 20;
    private static final long PROGRESS_EVERY_MILLIS = 250;

    private final Skopeo skopeo;
    private final Umoci umoci;
    private final UnpackedImages images;
    private final long maxFileBytes;
    private final long maxImageBytes;
    private final Duration timeout;
    /** One pull or removal of a digest at a time: a lock per stripe of digests, so none is kept per digest ever seen. */
    private final Object[] digestLocks = Stream.generate(Object::new).limit(64).toArray();
    private final ScheduledExecutorService ticker = Executors.newSingleThreadScheduledExecutor(r -> {
        Thread t = new Thread(r, "vivarium-oci-progress");
        t.setDaemon(true);
        return t;
    });

    @Activate
    public OciRootImages(OciImagesConfig config, BundleContext context) throws IOException {
        // its classes are not all loaded up front as a backend's are: the tar reader it embeds has classes of
        // formats it never reads, which link to packages that are not there
        this(OciImagesSettings.from(config, context.getProperty(OciImagesSettings.INSECURE_PROPERTY)), cacheDir(config, context));
    }

    OciRootImages(OciImagesSettings settings, Path cacheDir) throws IOException {
        this.skopeo = new Skopeo(settings.skopeo(), settings.authFile(), settings.insecureRegistries());
        this.umoci = new Umoci(settings.umoci());
        this.images = new UnpackedImages(cacheDir);
        this.maxFileBytes = settings.maxFileBytes();
        this.maxImageBytes = settings.maxImageBytes();
        this.timeout = settings.pullTimeout();
    }

    private static Path cacheDir(OciImagesConfig config, BundleContext context) {
        if (!config.cache__dir().isBlank()) {
            return Path.of(config.cache__dir());
        }
        String state = context.getProperty("vivarium.state.dir");
        return Path.of(state == null || state.isBlank() ? "var" : state, "images", "oci");
    }

    @Deactivate
    void deactivate() {
        ticker.shutdownNow();
    }

    @Override
    public Optional<String> unavailable() {
        for (Path tool : List.of(skopeo.path(), umoci.path())) {
            if (!Files.isExecutable(tool)) {
                return Optional.of(tool + " is not installed: OCI images are pulled with skopeo and unpacked with umoci "
                        + "(apt-get install skopeo umoci)");
            }
        }
        return Optional.empty();
    }

    private Object lockOf(String digest) {
        return digestLocks[Math.floorMod(digest.hashCode(), digestLocks.length)];
    }

    @Override
    public void remove(String digest) {
        synchronized (lockOf(digest)) {
            try {
                images.remove(digest);
            } catch (IOException e) {
                LOG.log(System.Logger.Level.WARNING, "cannot remove the unpacked image " + digest + ": " + e.getMessage());
            }
        }
    }

    @Override
    public void checkReference(String reference) {
        ImageReference.parse(reference);
    }

    @Override
    public RootImage pull(String reference, Progress progress) {
        ImageReference ref = ImageReference.parse(reference);
        unavailable().ifPresent(why -> {
            throw ApiException.unavailable(why, 60);
        });
        byte[] raw;
        try {
            raw = skopeo.rawManifest(ref);
        } catch (IOException e) {
            throw sourceFailed(ref, e);
        }
        String digest = Sha256.digestOf(raw);
        synchronized (lockOf(digest)) {
            Optional<RootImage> done = images.find(digest);
            if (done.isPresent()) {
                return done.get();
            }
            return pullInto(ref, digest, raw, progress);
        }
    }

    private RootImage pullInto(ImageReference ref, String digest, byte[] raw, Progress progress) {
        Path staging = null;
        try {
            staging = images.stage();
            long[] size = OciLayout.sizeOf(raw);
            int totalMib = (int) ((size[0] + BYTES_PER_MIB - 1) / BYTES_PER_MIB);
            int layerCount = (int) size[1];
            progress.step(LAYERS, 0, layerCount);
            progress.step(MIB, 0, totalMib);
            Path layoutDir = staging.resolve("layout");
            var tick = ticker.scheduleAtFixedRate(() -> progress.step(MIB, (int) Math.min(totalMib, bytesIn(layoutDir) / BYTES_PER_MIB),
                    totalMib), PROGRESS_EVERY_MILLIS, PROGRESS_EVERY_MILLIS, TimeUnit.MILLISECONDS);
            try {
                skopeo.copy(ref.pinned(digest), layoutDir, timeout);
            } catch (IOException e) {
                throw sourceFailed(ref, e);
            } finally {
                tick.cancel(false);
            }
            OciLayout layout = new OciLayout(layoutDir);
            List<OciLayout.Layer> layers = layout.layers();
            progress.step(MIB, totalMib == 0 ? (int) (bytesIn(layoutDir) / BYTES_PER_MIB) : totalMib, totalMib);
            LayerCheck check = new LayerCheck(maxFileBytes, maxImageBytes);
            for (int i = 0; i < layers.size(); i++) {
                check.check(layout.blob(layers.get(i).digest()), layers.get(i));
                progress.step(LAYERS, i + 1, layers.size());
            }
            Path bundle = staging.resolve("bundle");
            umoci.unpack(layoutDir, bundle, timeout);
            OciLayout.Config config = layout.config();
            Umoci.Process process = Umoci.processOf(bundle);
            Map<String, String> env = new LinkedHashMap<>(config.env());
            if (process.home() != null) {
                env.putIfAbsent("HOME", process.home());
            }
            HostCommand.run(List.of("sync", "--file-system", bundle.toString()), timeout);
            RootImage image = images.publish(bundle, new UnpackedImages.Facts(digest, env, config.workdir(), config.user(),
                    process.uid(), process.gid(), config.entrypoint(), config.cmd()));
            LOG.log(System.Logger.Level.INFO, "pulled " + ref.text() + " (" + digest + ", " + layers.size() + " layers)");
            return image;
        } catch (LayerCheck.Refused e) {
            throw new ApiException(422, "the image " + ref.text() + " is refused: " + e.getMessage());
        } catch (IOException e) {
            if (noSpace(e)) {
                throw new ApiException(507, "no space left to unpack " + ref.text() + " in " + images.dir() + ": " + e.getMessage());
            }
            throw new ApiException(422, "cannot unpack " + ref.text() + ": " + e.getMessage());
        } finally {
            if (staging != null) {
                try {
                    UnpackedImages.deleteTree(staging);
                } catch (IOException e) {
                    LOG.log(System.Logger.Level.WARNING, "cannot remove the staging " + staging + ": " + e.getMessage());
                }
            }
        }
    }

    /** A source that cannot be read: a registry unreachable or refusing is 502, a file here that is not an image 400. */
    private static ApiException sourceFailed(ImageReference ref, IOException e) {
        if (noSpace(e)) {
            return new ApiException(507, "no space left to pull " + ref.text() + ": " + e.getMessage());
        }
        if (ref.remote()) {
            return new ApiException(502, "the registry " + ref.registry() + " did not give " + ref.text() + ": " + e.getMessage());
        }
        return ApiException.badRequest(ref.text() + " cannot be read as an image: " + e.getMessage());
    }

    private static boolean noSpace(IOException e) {
        return String.valueOf(e.getMessage()).contains("no space left on device")
                || String.valueOf(e.getMessage()).contains("No space left on device");
    }

    private static long bytesIn(Path dir) {
        try (Stream<Path> files = Files.walk(dir)) {
            return files.filter(Files::isRegularFile).mapToLong(p -> p.toFile().length()).sum();
        } catch (IOException | java.io.UncheckedIOException e) {
            return 0; // skopeo is still making it, or renaming in it
        }
    }
}
