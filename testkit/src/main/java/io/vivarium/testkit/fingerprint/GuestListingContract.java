package io.vivarium.testkit.fingerprint;

import static org.junit.jupiter.api.Assertions.assertAll;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import java.util.stream.Stream;

import io.vivarium.api.spi.FingerprintMode;
import io.vivarium.testkit.fingerprint.GuestShell.Listing;

import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The conformance suite of {@link FingerprintMode#guestListingCommand}: every mode's listing is run
 * for real, with the host's tools and with busybox's, against hostile names, and must agree with the
 * mode's host fingerprints. A mode's test extends this class.
 */
public abstract class GuestListingContract {

    /** The mode under test. */
    protected abstract FingerprintMode newMode();

    /** The tool the listing runs per file (replaced by a failing shim in one case). */
    protected abstract String perFileTool();

    /** What the listing says on stderr when that tool fails. */
    protected abstract String toolFailureMessage();

    private final FingerprintMode mode = newMode();

    @TempDir
    Path tmp;

    private HostileTree tree;

    @BeforeEach
    void createTree() throws IOException, InterruptedException {
        tree = HostileTree.create(tmp);
    }

    @ParameterizedTest
    @EnumSource(GuestShell.class)
    void listsEveryRegularFileWithTheHostFingerprint(GuestShell shell) throws Exception {
        shell.assumeInstalled();
        Listing listing = shell.run(mode.guestListingCommand(tree.dirs()), tmp);

        assertEquals(0, listing.exitCode(), listing.stderr());
        assertEquals("", listing.stderr());
        assertEquals(tree.files(), listing.files().keySet());
        assertAll(tree.files().stream().map(f -> () -> assertEquals(hostFingerprint(f), listing.files().get(f), f)));
        assertNothingNamedPwned();
    }

    @ParameterizedTest
    @EnumSource(GuestShell.class)
    void aMissingDirectoryFailsTheListing(GuestShell shell) throws Exception {
        shell.assumeInstalled();
        Listing listing = shell.run(mode.guestListingCommand(List.of(tree.dirs().get(0), tmp + "/missing")), tmp);

        assertNotEquals(0, listing.exitCode());
        assertFalse(listing.stderr().isBlank());
    }

    @ParameterizedTest
    @EnumSource(GuestShell.class)
    void aRelativeDirectoryIsRefusedNotTakenForAFindExpression(GuestShell shell) throws Exception {
        shell.assumeInstalled();
        Path victim = Files.writeString(tmp.resolve("victim"), "still here");

        Listing listing = shell.run(mode.guestListingCommand(List.of("-delete")), tmp);

        assertNotEquals(0, listing.exitCode());
        assertTrue(listing.stderr().contains("not an absolute path: -delete"), listing.stderr());
        assertTrue(Files.exists(victim));
    }

    @ParameterizedTest
    @EnumSource(GuestShell.class)
    void aFailingPerFileToolFailsTheListing(GuestShell shell) throws Exception {
        shell.assumeInstalled();
        Path shims = Files.createDirectory(tmp.resolve("shims"));
        Path broken = Files.writeString(shims.resolve(perFileTool()), "#!/bin/sh\necho broken >&2\nexit 1\n");
        Files.setPosixFilePermissions(broken, PosixFilePermissions.fromString("rwxr-xr-x"));

        Listing listing = shell.run(mode.guestListingCommand(tree.dirs()), tmp, false, shims);

        assertNotEquals(0, listing.exitCode());
        assertTrue(listing.stderr().contains(toolFailureMessage()), listing.stderr());
    }

    @ParameterizedTest
    @EnumSource(GuestShell.class)
    void aFileTheUserCannotReadIsUnreadable(GuestShell shell) throws Exception {
        shell.assumeInstalled();
        GuestShell.assumeCanRunAsNobody();
        Path secret = Files.writeString(tree.spaced().resolve("secret"), "secret");
        Files.setPosixFilePermissions(secret, PosixFilePermissions.fromString("---------"));

        Listing listing = shell.run(mode.guestListingCommand(tree.dirs()), tmp, true, null);

        assertEquals(0, listing.exitCode(), listing.stderr());
        assertEquals(FingerprintMode.UNREADABLE, listing.files().get(secret.toString()));
        assertAll(tree.files().stream().map(f -> () -> assertEquals(hostFingerprint(f), listing.files().get(f), f)));
    }

    @ParameterizedTest
    @EnumSource(GuestShell.class)
    void aDirectoryTheUserCannotReadFailsTheListing(GuestShell shell) throws Exception {
        shell.assumeInstalled();
        GuestShell.assumeCanRunAsNobody();
        Path locked = Files.createDirectory(tree.spaced().resolve("locked"));
        Files.writeString(locked.resolve("inside"), "hidden");
        Files.setPosixFilePermissions(locked, PosixFilePermissions.fromString("---------"));

        Listing listing = shell.run(mode.guestListingCommand(tree.dirs()), tmp, true, null);

        assertNotEquals(0, listing.exitCode());
        assertFalse(listing.stderr().isBlank());
    }

    @ParameterizedTest
    @EnumSource(GuestShell.class)
    void aDirectoryTheUserCanListButNotEnterFailsTheListing(GuestShell shell) throws Exception {
        shell.assumeInstalled();
        GuestShell.assumeCanRunAsNobody();
        Path listable = Files.createDirectory(tree.spaced().resolve("listable"));
        Files.writeString(listable.resolve("inside"), "named but not reachable");
        Files.setPosixFilePermissions(listable, PosixFilePermissions.fromString("rwxr--r--"));

        Listing listing = shell.run(mode.guestListingCommand(tree.dirs()), tmp, true, null);

        assertNotEquals(0, listing.exitCode());
        assertFalse(listing.stderr().isBlank());
    }

    private String hostFingerprint(String file) throws IOException {
        Path path = Path.of(file);
        return mode.fingerprint(path, Files.readAttributes(path, BasicFileAttributes.class, LinkOption.NOFOLLOW_LINKS));
    }

    private void assertNothingNamedPwned() throws IOException {
        try (Stream<Path> all = Files.walk(tmp)) {
            assertEquals(List.of(), all.filter(p -> p.endsWith("pwned")).toList());
        }
        assertFalse(Files.exists(Path.of("pwned")), "pwned in the test's working directory");
    }
}
