#include <stdio.h>

int mod103(int x)
{
    return x + 103;
}
