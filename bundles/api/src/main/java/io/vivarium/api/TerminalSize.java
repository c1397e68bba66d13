package io.vivarium.api;

/**
 * The size of a terminal in character cells, each 1 to {@value #MAX}. Since 2.4.
 *
 * @param rows lines
 * @param cols columns
 */
public record TerminalSize(int rows, int cols) {
    public static final int MAX = 10_000;
    /** What a terminal that says nothing of its size gets. */
    public static final TerminalSize DEFAULT = new TerminalSize(24, 80);

    public TerminalSize {
        if (rows < 1 || rows > MAX || cols < 1 || cols > MAX) {
            throw new IllegalArgumentException("rows and cols must be between 1 and " + MAX + ", not " + rows + "x" + cols);
        }
    }
}
