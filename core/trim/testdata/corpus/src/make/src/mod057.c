#include <stdio.h>

int mod057(int x)
{
    return x + 57;
}
