"""What only the course needs: its data, training loop, diagnostics, measurements, tables, figures and exercises."""
