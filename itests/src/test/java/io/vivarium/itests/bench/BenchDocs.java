package io.vivarium.itests.bench;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * Puts the reports of a {@code ./vivarium bench} run ({@code itests/target/bench/NAME.md}, written
 * by {@link BenchReport}) into docs/benchmarks.md: each between the markers
 * {@code <!-- bench:NAME -->} and {@code <!-- /bench:NAME -->} of its section, replacing the previous
 * run's, and nothing outside the markers. Then it rebuilds the table of every goal between
 * {@code <!-- bench:goals -->} markers from the sections' goal tables, and prints the goals of
 * this run. A full run ({@code --full}) also writes the run of record (when, machine, load)
 * between {@code <!-- bench:run -->} markers, and marks a section whose benchmark wrote no report
 * as not run, so that no section keeps an earlier run's figures.
 *
 * <p>Self-contained (JDK only) so that the script runs it from source:
 * {@code java BenchDocs.java DOC REPORT_DIR [--full] [--started EPOCH_SECONDS] [--load LOAD] [--commit TEXT]}.
 */
public final class BenchDocs {
    /** The columns of a report's goal table, which the table of every goal is built from. */
    static final String[] GOAL_COLUMNS = {"figure", "goal", "measured", "result"};
    static final String GOALS = "goals";
    static final String RUN = "run";

    private static final Pattern BLOCK = Pattern.compile("<!-- bench:([\\w.-]+) -->\\n(.*?)<!-- /bench:\\1 -->", Pattern.DOTALL);
    private static final Pattern HEADING = Pattern.compile("(?m)^#{1,6} (.+)$");
    private static final Pattern CELL_BORDER = Pattern.compile("(?<!\\\\)\\|");

    private BenchDocs() {
    }

    public static void main(String[] args) throws IOException {
        if (args.length < 2) {
            System.err.println("usage: java BenchDocs.java DOC REPORT_DIR [--full] [--started EPOCH_SECONDS] [--load LOAD] [--commit TEXT]");
            System.exit(2);
        }
        Path doc = Path.of(args[0]);
        Map<String, String> options = new LinkedHashMap<>();
        for (int i = 2; i < args.length; i++) {
            if (args[i].equals("--full")) {
                options.put("full", "true");
            } else if (args[i].startsWith("--") && i + 1 < args.length) {
                options.put(args[i].substring(2), args[++i]);
            } else {
                throw new IllegalArgumentException("unknown argument " + args[i]);
            }
        }
        Map<String, String> reports = reports(Path.of(args[1]));
        boolean full = options.containsKey("full");
        String run = full ? runOfRecord(options) : null;
        String updated;
        try {
            updated = update(Files.readString(doc, StandardCharsets.UTF_8), reports, full, run);
        } catch (IllegalArgumentException e) {
            System.err.println("bench: " + e.getMessage());
            System.exit(1);
            return;
        }
        Files.writeString(doc, updated, StandardCharsets.UTF_8);
        System.out.println();
        System.out.println(full ? "Every goal (also at the top of " + doc + "):" : "The goals of this run (put into " + doc + "):");
        System.out.println(goalTable(updated, full ? null : reports.keySet()));
    }

    /** The reports in {@code dir}, by name, in name order. */
    static Map<String, String> reports(Path dir) throws IOException {
        Map<String, String> reports = new TreeMap<>();
        if (Files.isDirectory(dir)) {
            try (Stream<Path> files = Files.list(dir)) {
                for (Path f : files.filter(f -> f.getFileName().toString().endsWith(".md")).toList()) {
                    String name = f.getFileName().toString();
                    reports.put(name.substring(0, name.length() - 3), Files.readString(f, StandardCharsets.UTF_8));
                }
            }
        }
        return reports;
    }

    /**
     * {@code doc} with each report in its section, the run of record (if {@code run} is not null),
     * and the table of every goal rebuilt. With {@code full}, a section without a report says it
     * was not run and its goals are listed as such.
     *
     * @throws IllegalArgumentException if a report has no section in {@code doc}
     */
    static String update(String doc, Map<String, String> reports, boolean full, String run) {
        Set<String> sections = new java.util.LinkedHashSet<>();
        Matcher m = BLOCK.matcher(doc);
        while (m.find()) {
            sections.add(m.group(1));
        }
        for (String name : reports.keySet()) {
            if (!sections.contains(name) || name.equals(GOALS) || name.equals(RUN)) {
                throw new IllegalArgumentException("the report " + name + " has no section in the document: add a section "
                        + "with what it measures, its contender and its command, and under them the markers <!-- bench:"
                        + name + " --> and <!-- /bench:" + name + " -->");
            }
        }
        String out = replaceBlocks(doc, (name, old) -> {
            if (reports.containsKey(name)) {
                return reports.get(name);
            }
            if (name.equals(RUN)) {
                return run == null ? old : run;
            }
            if (full && !name.equals(GOALS)) {
                return notRun(old, "this run wrote no report for it (the build's output says why)");
            }
            return old;
        });
        String goals = goalTable(out, null);
        return replaceBlocks(out, (name, old) -> name.equals(GOALS) ? goals : old);
    }

    /**
     * The table of the goals of the sections in {@code doc} ({@code only} those named, or all if
     * null), each row led by the benchmark's name linked to its section, and a count of the results.
     */
    static String goalTable(String doc, Set<String> only) {
        List<String> rows = new ArrayList<>();
        int[] counts = new int[3];
        Matcher m = BLOCK.matcher(doc);
        while (m.find()) {
            String name = m.group(1);
            if (name.equals(GOALS) || name.equals(RUN) || (only != null && !only.contains(name))) {
                continue;
            }
            String link = "[" + name + "](#" + anchor(heading(doc, m.start())) + ")";
            for (List<String> goal : goalRows(m.group(2))) {
                rows.add("| " + link + " | " + String.join(" | ", goal) + " |");
                String result = goal.get(3);
                counts[result.startsWith("not run") ? 2 : result.equals("PASS") ? 0 : 1]++;
            }
        }
        return "| benchmark | " + String.join(" | ", GOAL_COLUMNS) + " |\n|---|---|---|---|---|\n"
                + String.join("\n", rows) + (rows.isEmpty() ? "" : "\n")
                + String.format(Locale.ROOT, "%n%d goals: %d PASS, %d FAIL, %d not run.%n", rows.size(), counts[0], counts[1],
                        counts[2]);
    }

    /** The rows of a section's goal table, as cells (figure, goal, measured, result); none if it has none. */
    static List<List<String>> goalRows(String section) {
        List<List<String>> rows = new ArrayList<>();
        List<String> lines = section.lines().toList();
        String header = "| " + String.join(" | ", GOAL_COLUMNS) + " |";
        int i = lines.indexOf(header);
        if (i < 0) {
            return rows;
        }
        for (int k = i + 2; k < lines.size() && lines.get(k).startsWith("|"); k++) {
            String line = lines.get(k).strip();
            List<String> cells = Stream.of(CELL_BORDER.split(line.substring(1, line.length() - 1), -1)).map(String::strip)
                    .toList();
            if (cells.size() != GOAL_COLUMNS.length) {
                throw new IllegalArgumentException("a goal row without " + GOAL_COLUMNS.length + " cells: " + line);
            }
            rows.add(cells);
        }
        return rows;
    }

    /** A section's content when its benchmark was not run: why, and its goals (from the last run) as not run. */
    static String notRun(String old, String reason) {
        StringBuilder s = new StringBuilder("Not run: ").append(reason).append(".\n");
        List<List<String>> goals = goalRows(old);
        if (!goals.isEmpty()) {
            s.append("\n| ").append(String.join(" | ", GOAL_COLUMNS)).append(" |\n|---|---|---|---|\n");
            for (List<String> g : goals) {
                s.append("| ").append(g.get(0)).append(" | ").append(g.get(1)).append(" | — | not run: ").append(reason)
                        .append(" |\n");
            }
        }
        return s.toString();
    }

    /** The run of record: when, at which commit, on which machine, under which load. */
    static String runOfRecord(Map<String, String> options) {
        Instant end = Instant.now();
        Instant start = options.containsKey("started") ? Instant.ofEpochSecond(Long.parseLong(options.get("started"))) : end;
        DateTimeFormatter day = DateTimeFormatter.ofPattern("yyyy-MM-dd HH:mm").withZone(ZoneOffset.UTC);
        DateTimeFormatter time = DateTimeFormatter.ofPattern("HH:mm").withZone(ZoneOffset.UTC);
        String commit = options.containsKey("commit") ? ", commit " + options.get("commit") : "";
        return String.format(Locale.ROOT, "**Run of record:** `./vivarium bench`, %s–%s UTC%s. **Machine:** %s. **Load "
                + "average:** %s at the start, %s at the end (a shared machine: read the ratios, which compare contenders "
                + "measured side by side).%n", day.format(start), time.format(end), commit, machine(),
                options.getOrDefault("load", "?"), load());
    }

    private static String machine() {
        String cpu = firstValue(Path.of("/proc/cpuinfo"), "model name");
        String memKib = firstValue(Path.of("/proc/meminfo"), "MemTotal").replaceAll("\\D", "");
        String os = firstValue(Path.of("/etc/os-release"), "PRETTY_NAME").replace("\"", "");
        return String.format(Locale.ROOT, "%d CPUs (%s), %s GiB RAM, %s, kernel %s, Java %s",
                Runtime.getRuntime().availableProcessors(), cpu,
                memKib.isEmpty() ? "?" : Long.toString(Math.round(Long.parseLong(memKib) / 1048576.0)), os,
                System.getProperty("os.version"), System.getProperty("java.version"));
    }

    /** The value of the first line of {@code file} that starts with {@code key} (after ':' or '='), or "". */
    private static String firstValue(Path file, String key) {
        try {
            return Files.readAllLines(file).stream().filter(l -> l.startsWith(key)).findFirst()
                    .map(l -> l.substring(l.indexOf(l.contains(":") ? ':' : '=') + 1).strip()).orElse("");
        } catch (IOException e) {
            return "";
        }
    }

    private static String load() {
        try {
            return Files.readString(Path.of("/proc/loadavg")).split(" ")[0];
        } catch (IOException e) {
            return "?";
        }
    }

    /** The text of the last heading before {@code offset}. */
    private static String heading(String doc, int offset) {
        Matcher h = HEADING.matcher(doc.substring(0, offset));
        String last = "";
        while (h.find()) {
            last = h.group(1);
        }
        return last;
    }

    /** The anchor GitHub gives a heading: lower case, punctuation dropped, spaces as hyphens. */
    static String anchor(String heading) {
        return heading.strip().toLowerCase(Locale.ROOT).replaceAll("[^\\p{L}\\p{N} _-]", "").replace(' ', '-');
    }

    private interface Content {
        String of(String name, String old);
    }

    private static String replaceBlocks(String doc, Content content) {
        Matcher m = BLOCK.matcher(doc);
        StringBuilder out = new StringBuilder();
        while (m.find()) {
            String name = m.group(1);
            String text = content.of(name, m.group(2));
            text = text.isEmpty() || text.endsWith("\n") ? text : text + "\n";
            m.appendReplacement(out, Matcher.quoteReplacement("<!-- bench:" + name + " -->\n" + text + "<!-- /bench:" + name
                    + " -->"));
        }
        m.appendTail(out);
        return out.toString();
    }
}
