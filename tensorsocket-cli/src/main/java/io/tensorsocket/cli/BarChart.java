package io.tensorsocket.cli;

import java.awt.BasicStroke;
import java.awt.Color;
import java.awt.Font;
import java.awt.FontMetrics;
import java.awt.Graphics2D;
import java.awt.RenderingHints;
import java.awt.image.BufferedImage;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import javax.imageio.ImageIO;

/** A grouped bar chart drawn with Java2D into a PNG: categories on x, one bar per series, values labelled. */
final class BarChart {
    private static final Color[] COLORS = {
        new Color(0x9E9E9E), new Color(0x1E88E5), new Color(0x43A047), new Color(0xFB8C00)
    };

    private final String title;
    private final String yLabel;
    private final List<String> categories;
    private final List<String> series = new ArrayList<>();
    private final List<double[]> values = new ArrayList<>();
    private String subtitle = "";
    private double reference = Double.NaN;
    private String referenceLabel = "";
    private String format = "%.0f";

    BarChart(String title, String yLabel, List<String> categories) {
        this.title = title;
        this.yLabel = yLabel;
        this.categories = List.copyOf(categories);
    }

    BarChart series(String name, double[] v) {
        if (v.length != categories.size()) {
            throw new IllegalArgumentException(
                    "series " + name + " has " + v.length + " values for " + categories.size() + " categories");
        }
        series.add(name);
        values.add(v.clone());
        return this;
    }

    BarChart subtitle(String s) {
        this.subtitle = s;
        return this;
    }

    /** A dashed horizontal line, for a physical limit or a baseline. */
    BarChart reference(double value, String label) {
        this.reference = value;
        this.referenceLabel = label;
        return this;
    }

    void write(Path file) throws IOException {
        int w = 900;
        int h = 520;
        BufferedImage img = new BufferedImage(w, h, BufferedImage.TYPE_INT_RGB);
        Graphics2D g = img.createGraphics();
        g.setRenderingHint(RenderingHints.KEY_ANTIALIASING, RenderingHints.VALUE_ANTIALIAS_ON);
        g.setRenderingHint(RenderingHints.KEY_TEXT_ANTIALIASING, RenderingHints.VALUE_TEXT_ANTIALIAS_ON);
        g.setColor(Color.WHITE);
        g.fillRect(0, 0, w, h);
        int left = 80;
        int right = w - 30;
        int top = 80;
        int bottom = h - 70;
        double max = 0;
        for (double[] v : values) {
            for (double x : v) {
                if (Double.isFinite(x)) {
                    max = Math.max(max, x);
                }
            }
        }
        if (Double.isFinite(reference)) {
            max = Math.max(max, reference);
        }
        double step = niceStep(max / 5);
        double topValue = Math.max(step, Math.ceil(max * 1.1 / step) * step);
        g.setColor(Color.BLACK);
        g.setFont(new Font(Font.SANS_SERIF, Font.BOLD, 18));
        g.drawString(title, left, 32);
        g.setFont(new Font(Font.SANS_SERIF, Font.PLAIN, 13));
        g.setColor(new Color(0x555555));
        g.drawString(subtitle, left, 54);
        // grid and y axis
        g.setFont(new Font(Font.SANS_SERIF, Font.PLAIN, 12));
        FontMetrics fm = g.getFontMetrics();
        for (double y = 0; y <= topValue + 1e-9; y += step) {
            int py = bottom - (int) Math.round((bottom - top) * y / topValue);
            g.setColor(new Color(0xE0E0E0));
            g.drawLine(left, py, right, py);
            g.setColor(new Color(0x444444));
            String s = label(y);
            g.drawString(s, left - 8 - fm.stringWidth(s), py + 4);
        }
        Graphics2D rot = (Graphics2D) g.create();
        rot.rotate(-Math.PI / 2);
        rot.drawString(yLabel, -(top + bottom) / 2 - fm.stringWidth(yLabel) / 2, 18);
        rot.dispose();
        // bars
        int groups = categories.size();
        double groupWidth = (double) (right - left) / groups;
        double barWidth = groupWidth * 0.75 / Math.max(1, series.size());
        for (int c = 0; c < groups; c++) {
            double gx = left + c * groupWidth + groupWidth * 0.125;
            for (int s = 0; s < series.size(); s++) {
                double v = values.get(s)[c];
                if (!Double.isFinite(v)) {
                    continue;
                }
                int bh = (int) Math.round((bottom - top) * v / topValue);
                int bx = (int) Math.round(gx + s * barWidth);
                g.setColor(COLORS[s % COLORS.length]);
                g.fillRect(bx, bottom - bh, (int) Math.max(1, barWidth - 4), bh);
                g.setColor(Color.BLACK);
                String t = String.format(Locale.ROOT, format, v);
                g.drawString(t, bx + (int) (barWidth - 4) / 2 - fm.stringWidth(t) / 2, bottom - bh - 4);
            }
            g.setColor(Color.BLACK);
            String cat = categories.get(c);
            g.drawString(cat, (int) (left + c * groupWidth + groupWidth / 2 - fm.stringWidth(cat) / 2.0), bottom + 18);
        }
        g.setColor(Color.BLACK);
        g.drawLine(left, bottom, right, bottom);
        if (Double.isFinite(reference)) {
            int py = bottom - (int) Math.round((bottom - top) * reference / topValue);
            g.setColor(new Color(0xC62828));
            g.setStroke(new BasicStroke(2, BasicStroke.CAP_BUTT, BasicStroke.JOIN_MITER, 10, new float[] {8, 6}, 0));
            g.drawLine(left, py, right, py);
            g.drawString(referenceLabel, right - fm.stringWidth(referenceLabel), py - 6);
        }
        // legend
        int lx = left;
        for (int s = 0; s < series.size(); s++) {
            g.setColor(COLORS[s % COLORS.length]);
            g.fillRect(lx, h - 30, 14, 14);
            g.setColor(Color.BLACK);
            g.drawString(series.get(s), lx + 20, h - 18);
            lx += 40 + fm.stringWidth(series.get(s));
        }
        g.dispose();
        Path parent = file.toAbsolutePath().getParent();
        if (parent != null) {
            Files.createDirectories(parent);
        }
        if (!ImageIO.write(img, "png", file.toFile())) {
            throw new IOException("no PNG writer in this JDK");
        }
    }

    private static double niceStep(double raw) {
        if (!(raw > 0)) {
            return 1;
        }
        double mag = Math.pow(10, Math.floor(Math.log10(raw)));
        double n = raw / mag;
        return (n <= 1 ? 1 : n <= 2 ? 2 : n <= 5 ? 5 : 10) * mag;
    }

    private static String label(double v) {
        return v == Math.rint(v) ? String.format(Locale.ROOT, "%.0f", v) : String.format(Locale.ROOT, "%.2g", v);
    }
}
