package io.vivarium.cli.internal;

import java.util.ArrayList;
import java.util.List;

/** A plain-text table with columns padded to their widest cell. */
final class Table {
    private final List<String[]> rows = new ArrayList<>();

    Table(String... header) {
        rows.add(header);
    }

    Table row(Object... cells) {
        String[] r = new String[cells.length];
        for (int i = 0; i < cells.length; i++) {
            r[i] = cells[i] == null ? "-" : String.valueOf(cells[i]);
        }
        rows.add(r);
        return this;
    }

    @Override
    public String toString() {
        int columns = rows.get(0).length;
        int[] width = new int[columns];
        for (String[] r : rows) {
            for (int i = 0; i < columns; i++) {
                width[i] = Math.max(width[i], r[i].length());
            }
        }
        StringBuilder sb = new StringBuilder();
        for (String[] r : rows) {
            for (int i = 0; i < columns; i++) {
                sb.append(i == columns - 1 ? r[i] : String.format("%-" + (width[i] + 2) + "s", r[i]));
            }
            sb.append('\n');
        }
        return sb.toString();
    }
}
