package io.vivarium.itests.osgi;

import static org.ops4j.pax.exam.CoreOptions.bundle;
import static org.ops4j.pax.exam.CoreOptions.cleanCaches;
import static org.ops4j.pax.exam.CoreOptions.frameworkProperty;
import static org.ops4j.pax.exam.CoreOptions.junitBundles;
import static org.ops4j.pax.exam.CoreOptions.systemPackage;
import static org.ops4j.pax.exam.CoreOptions.systemTimeout;
import static org.ops4j.pax.exam.CoreOptions.workingDirectory;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HexFormat;
import java.util.List;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import io.vivarium.common.framework.HostLogging;
import io.vivarium.testkit.TcpPorts;

import org.ops4j.pax.exam.Option;

/**
 * The Pax Exam configuration shared by every in-container test: a Felix framework (from the test
 * classpath) running exactly the bundles the distribution ships, each at its feature start level,
 * with slf4j from the test classpath as the launcher has it from lib/, plus Pax Exam's own
 * in-container bundles (JUnit and the probe). Computed in the test JVM.
 *
 * <p>Each test class gets {@code target/osgi/<class>/} with the framework storage ({@code work/},
 * removed after the run), a fresh state directory ({@code state/}), a token file holding one admin
 * token ({@code tokens}) and an empty FileInstall folder ({@code deploy/}); the HTTP server listens
 * on a free port on 127.0.0.1. Framework properties follow the launcher's where they matter.
 */
final class VivariumOptions {

    /** Framework property: the admin bearer token written to the token file. */
    static final String ADMIN_TOKEN = "vivarium.itests.admin.token";
    /** Framework property: comma-separated {@code file:} locations of every shipped bundle. */
    static final String SHIPPED_LOCATIONS = "vivarium.itests.shipped";
    static final String HTTP_PORT = "org.osgi.service.http.port";
    static final String HTTP_HOST = "org.apache.felix.http.host";
    static final String STATE_DIR = "vivarium.state.dir";
    static final String TOKEN_FILE = "vivarium.token.file";

    /** Pax Exam's system timeout: framework start/stop and service waits of Pax Exam itself. */
    static final long SYSTEM_TIMEOUT_MILLIS = 60_000;

    private VivariumOptions() {
    }

    static Option[] forTestClass(Class<?> testClass) {
        VivariumDistribution dist = VivariumDistribution.locate();
        Path dir = Path.of(System.getProperty("vivarium.itests.target", "target")).toAbsolutePath()
                .resolve("osgi").resolve(testClass.getSimpleName());
        String token = HexFormat.of().formatHex(new SecureRandom().generateSeed(16));
        Path state = dir.resolve("state");
        Path tokenFile = dir.resolve("tokens");
        Path deploy = dir.resolve("deploy");
        Path fileinstallTmp = dir.resolve("fileinstall-tmp");
        try {
            deleteRecursively(dir);
            Files.createDirectories(state);
            Files.createDirectories(deploy);
            Files.createDirectories(fileinstallTmp);
            Files.writeString(tokenFile, "# written by " + testClass.getName() + "\n" + token + " default operator\n",
                    StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot prepare " + dir, e);
        }

        List<Option> options = new ArrayList<>();
        options.add(cleanCaches());
        options.add(workingDirectory(dir.resolve("work").toString()));
        options.add(systemTimeout(SYSTEM_TIMEOUT_MILLIS));

        // Nothing from the test classpath (Jackson, JUnit 5, ...) may leak into bundles, but for slf4j,
        // which the system bundle exports from it as the launcher does from lib/ (HostLogging).
        options.add(frameworkProperty("felix.bootdelegation.implicit").value("false"));
        options.add(systemPackage(HostLogging.systemPackagesExtra(VivariumOptions.class.getClassLoader())));
        // With no console, gogo would otherwise stop the framework after about 2 s.
        options.add(frameworkProperty("gosh.args").value("--nointeractive"));
        options.add(frameworkProperty(HTTP_PORT).value(String.valueOf(TcpPorts.free())));
        options.add(frameworkProperty(HTTP_HOST).value("127.0.0.1"));
        options.add(frameworkProperty(STATE_DIR).value(state.toString()));
        options.add(frameworkProperty(TOKEN_FILE).value(tokenFile.toString()));
        options.add(frameworkProperty(ADMIN_TOKEN).value(token));
        // As the launcher sets them (runtime-assembly FrameworkStarter.config), with everything under target/.
        options.add(frameworkProperty("felix.fileinstall.dir").value(deploy.toString()));
        options.add(frameworkProperty("felix.fileinstall.tmpdir").value(fileinstallTmp.toString()));
        options.add(frameworkProperty("felix.fileinstall.poll").value("500"));
        options.add(frameworkProperty("felix.fileinstall.noInitialDelay").value("true"));
        options.add(frameworkProperty(SHIPPED_LOCATIONS).value(dist.bundles().stream()
                .map(VivariumDistribution.ShippedBundle::location).collect(Collectors.joining(","))));

        // The shipped bundle set, exactly as the features name it.
        for (VivariumDistribution.ShippedBundle b : dist.bundles()) {
            options.add(bundle(b.location()).startLevel(b.startOrder()).start());
        }

        // Pax Exam's own in-container bundles (its core bundles are added by Pax Exam itself).
        options.add(junitBundles());
        return options.toArray(Option[]::new);
    }


    private static void deleteRecursively(Path dir) throws IOException {
        if (!Files.exists(dir)) {
            return;
        }
        try (Stream<Path> s = Files.walk(dir)) {
            for (Path p : s.sorted(Comparator.reverseOrder()).toList()) {
                Files.delete(p);
            }
        }
    }
}
