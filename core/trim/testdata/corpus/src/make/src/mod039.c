#include <stdio.h>

int mod039(int x)
{
    return x + 39;
}
