package io.vivarium.core.internal;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;
import java.nio.file.attribute.FileTime;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ForkJoinPool;
import java.util.concurrent.RecursiveAction;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BiConsumer;
import java.util.function.IntConsumer;

/**
 * The regular files below a directory with {@code find -xdev -type f} semantics, walked in parallel
 * (one task per directory) with a single attribute read per entry: symlinks are never followed,
 * directories on another device are skipped, anything that is neither a regular file nor a
 * directory is ignored.
 */
final class TreeWalk {
    static final String ATTRIBUTES = "unix:dev,ino,mode,uid,gid,size,lastModifiedTime,ctime,isRegularFile,isDirectory";
    private static final LinkOption[] NOFOLLOW = { LinkOption.NOFOLLOW_LINKS };

    /** A regular file and its attributes (the keys of {@link #ATTRIBUTES}). */
    record Entry(Path path, Map<String, Object> unix) implements BasicFileAttributes {
        @Override
        public FileTime lastModifiedTime() {
            return (FileTime) unix.get("lastModifiedTime");
        }

        @Override
        public FileTime lastAccessTime() {
            return lastModifiedTime();
        }

        @Override
        public FileTime creationTime() {
            return lastModifiedTime();
        }

        @Override
        public boolean isRegularFile() {
            return true;
        }

        @Override
        public boolean isDirectory() {
            return false;
        }

        @Override
        public boolean isSymbolicLink() {
            return false;
        }

        @Override
        public boolean isOther() {
            return false;
        }

        @Override
        public long size() {
            return (Long) unix.get("size");
        }

        @Override
        public Object fileKey() {
            return unix.get("ino");
        }

        FileTime ctime() {
            return (FileTime) unix.get("ctime");
        }
    }

    private TreeWalk() {
    }

    static Map<String, Object> attributes(Path p) throws IOException {
        return Files.readAttributes(p, ATTRIBUTES, NOFOLLOW);
    }

    /**
     * @param enter called with each directory and its attributes before it is read (the root too);
     *        may throw to fail the walk
     * @param counted called with the running number of files found, to enforce limits
     */
    static List<Entry> regularFiles(ForkJoinPool pool, Path root, BiConsumer<Path, Map<String, Object>> enter,
            IntConsumer counted) throws IOException {
        Map<String, Object> rootAttributes = attributes(root);
        enter.accept(root, rootAttributes);
        Queue<Entry> found = new ConcurrentLinkedQueue<>();
        AtomicInteger count = new AtomicInteger();
        Object device = rootAttributes.get("dev");
        try {
            pool.invoke(new Directory(root, device, enter, found, count, counted));
        } catch (UncheckedIOException e) {
            throw e.getCause();
        }
        return new ArrayList<>(found);
    }

    private static final class Directory extends RecursiveAction {
        private static final long serialVersionUID = 1L;
        private final transient Path dir;
        private final transient Object device;
        private final transient BiConsumer<Path, Map<String, Object>> enter;
        private final transient Queue<Entry> found;
        private final transient AtomicInteger count;
        private final transient IntConsumer counted;

        Directory(Path dir, Object device, BiConsumer<Path, Map<String, Object>> enter, Queue<Entry> found,
                AtomicInteger count, IntConsumer counted) {
            this.dir = dir;
            this.device = device;
            this.enter = enter;
            this.found = found;
            this.count = count;
            this.counted = counted;
        }

        @Override
        protected void compute() {
            List<Directory> below = new ArrayList<>();
            try (DirectoryStream<Path> entries = Files.newDirectoryStream(dir)) {
                for (Path p : entries) {
                    Map<String, Object> unix = attributes(p);
                    if (Boolean.TRUE.equals(unix.get("isRegularFile"))) {
                        found.add(new Entry(p, unix));
                        counted.accept(count.incrementAndGet());
                    } else if (Boolean.TRUE.equals(unix.get("isDirectory")) && device.equals(unix.get("dev"))) {
                        enter.accept(p, unix);
                        below.add(new Directory(p, device, enter, found, count, counted));
                    }
                }
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
            invokeAll(below);
        }
    }
}
