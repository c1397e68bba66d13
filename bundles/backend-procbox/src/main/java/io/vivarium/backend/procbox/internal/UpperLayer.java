package io.vivarium.backend.procbox.internal;

import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.FileVisitResult;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.Set;
import java.util.TreeSet;

/**
 * Reads which paths an overlay's upper layer changed, without looking at anything else of the
 * lower layer than the directories the upper one has too.
 *
 * <p>Opaque directories (those a command removed and made again) are recognised by their
 * effect rather than by their {@code trusted.overlay.opaque} xattr, which Java cannot read
 * ({@code UserDefinedFileAttributeView} only sees {@code user.*}) and whose tool
 * ({@code getfattr}) hosts need not have: a directory hides its lower counterpart exactly when
 * an entry of the lower one is neither in the upper one nor visible in the merged view. An
 * opaque directory whose lower entries were all written again hides nothing and is walked like
 * any other, which finds the same changes.
 */
final class UpperLayer {

    private UpperLayer() {
    }

    /**
     * Sandbox paths under {@code sandboxRoot} that may differ between {@code lower} and
     * {@code merged}: every non-directory of {@code upper} (files, symlinks, whiteouts), and every
     * directory of it that is new or hides lower entries, without what is below it; the
     * directories in between are only walked. Must not run while anything writes to the overlay.
     */
    static Set<String> touched(Path upper, Path lower, Path merged, String sandboxRoot) throws IOException {
        Set<String> touched = new TreeSet<>();
        Files.walkFileTree(upper, new SimpleFileVisitor<>() {
            @Override
            public FileVisitResult preVisitDirectory(Path dir, BasicFileAttributes attrs) throws IOException {
                if (dir.equals(upper)) {
                    return FileVisitResult.CONTINUE;
                }
                Path relative = upper.relativize(dir);
                if (!Files.isDirectory(lower.resolve(relative), LinkOption.NOFOLLOW_LINKS)
                        || hidesLowerEntries(upper.resolve(relative), lower.resolve(relative), merged.resolve(relative))) {
                    touched.add(sandboxPath(sandboxRoot, relative));
                    return FileVisitResult.SKIP_SUBTREE;
                }
                return FileVisitResult.CONTINUE;
            }

            @Override
            public FileVisitResult visitFile(Path file, BasicFileAttributes attrs) {
                touched.add(sandboxPath(sandboxRoot, upper.relativize(file)));
                return FileVisitResult.CONTINUE;
            }
        });
        return touched;
    }

    private static boolean hidesLowerEntries(Path upperDir, Path lowerDir, Path mergedDir) throws IOException {
        try (DirectoryStream<Path> entries = Files.newDirectoryStream(lowerDir)) {
            for (Path entry : entries) {
                Path name = entry.getFileName();
                if (!Files.exists(upperDir.resolve(name), LinkOption.NOFOLLOW_LINKS)
                        && !Files.exists(mergedDir.resolve(name), LinkOption.NOFOLLOW_LINKS)) {
                    return true;
                }
            }
        }
        return false;
    }

    private static String sandboxPath(String sandboxRoot, Path relative) {
        return sandboxRoot + "/" + relative.toString();
    }
}
